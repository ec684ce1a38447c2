"""People's win rates beside a RAEE fit (``fit raee --human``): the labels that
speak to a candidate and its anchor rectify the judge's outcomes (PPI++, :mod:`orchestrator.raee.human`)."""

from __future__ import annotations

from ...raee import RaeeReport, ReferenceJudgments
from ..judges.human_labels import HumanLabels

__all__ = ["fmt", "format_people", "with_people"]


def fmt(x: float | None, spec: str) -> str:
    """A number for the report's text ("-" where there is none)."""
    return "-" if x is None else format(x, spec)


def with_people(report: RaeeReport, data: ReferenceJudgments, human: HumanLabels, *, soft: bool) -> RaeeReport:
    """Each row's people's win rate against its anchor (PPI++, :mod:`orchestrator.raee.human`) from
    the labels that speak to the candidate and the anchor on a judged prompt."""
    from ...raee.human import people_estimates

    votes, scores = human.pair_votes(), human.mean_scores()

    def preference(prompt: str, candidate: str, anchor: str) -> float | None:
        return human.preference(prompt, candidate, anchor, votes=votes, scores=scores)

    estimates = people_estimates(data, preference, soft=soft, level=report.level)
    rows = []
    for row in report.rows:
        e = estimates.get((row.anchor, row.judge, row.candidate))
        if e is not None:
            update = {
                "people": e.estimate,
                "people_low": e.low,
                "people_high": e.high,
                "people_labels": e.labelled,
                "people_weight": e.weight,
            }
            row = row.model_copy(update=update)
        rows.append(row)
    used = {(a, c): e.labelled for (a, _, c), e in estimates.items()}
    warnings = list(report.warnings)
    if not used:
        warnings.append(
            "no label speaks to a candidate and its anchor on a judged prompt (at least two per candidate are needed): "
            "a label names the candidate and the anchor (pairwise), or scores both answers (absolute)"
        )
    return report.model_copy(update={"rows": rows, "human_labels": sum(used.values()), "warnings": warnings})


def format_people(report: RaeeReport) -> list[str]:
    """The people's win rates as lines of ``fit raee``'s text (none without labels)."""
    rows = [r for r in report.rows if r.people is not None]
    if not rows:
        return []
    lines = [
        "",
        f"people's win rate (PPI++: the judge's outcomes rectified by {report.human_labels} labels; {report.level:.0%} intervals):",
    ]
    for r in sorted(rows, key=lambda r: (r.anchor, r.judge != "pooled", r.judge, -(r.people or 0.0))):
        lines.append(
            f"  {r.anchor} / {r.judge:<14.14} {r.candidate:<22.22} {r.people:.3f} [{fmt(r.people_low, '.3f')}, "
            f"{fmt(r.people_high, '.3f')}]  judge {fmt(r.p_hat, '.3f')}  labels {r.people_labels}  λ {fmt(r.people_weight, '.2f')}"
        )
    return lines
