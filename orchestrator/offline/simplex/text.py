"""`fit simplex`'s report as text: the ranking, the judges' confusion matrices, diagnostics,
sensitivity and warnings — with a failed or fallback fit said first."""

from __future__ import annotations

from .fit import SimplexReport

__all__ = ["format_simplex"]


def _fmt_matrix(matrix: list[list[float]]) -> list[str]:
    return ["      true " + f"{m + 1:>2}: " + " ".join(f"{x:5.2f}" for x in row) for m, row in enumerate(matrix)]


def format_simplex(report: SimplexReport) -> str:
    """The report as text: the ranking, the judges, diagnostics, sensitivity, warnings."""
    outcome = (
        "hard scores (argmax counted)"
        if report.outcome == "hard"
        else "soft scores (option probabilities as fractional counts; our extension)"
    )
    banner = []
    if not report.converged:  # said first and loudly: the intervals below are not to be trusted
        banner = [
            f"NOT CONVERGED: the chains disagree on the ranking (R-hat {report.rhat.get('ranking', float('nan')):.3f} > 1.01). "
            "The expected scores and rank intervals below are NOT valid. Try: more --warmup and --draws; "
            "the default --count-weight auto (the paper's likelihood, --count-weight 1, mixes worse); a fixed --omega "
            "(0 or the default 1) and --beta-max (default 5) instead of 'prior'; the fallback fit (on unless --no-fallback); "
            "--sweep to see whether the ranking depends on ω or β_max.",
            "",
        ]
    if report.fallback_from:  # said first: these numbers are not from the model that was asked for
        banner = [
            f"FALLBACK: the requested fit ({report.fallback_from['label']}) did not converge (R-hat of the ranking "
            f"{report.fallback_from['rhat_ranking']:.3f} > 1.01); below is the fallback fit ({report.label}), whose chains agree.",
            "",
        ]
    lines = banner + [
        f"Bayesian simplex model — {report.levels} levels, {outcome}; {report.label}; "
        + (f"{report.labelled} answers labelled by people (their true level); " if report.labelled else "")
        + f"{report.settings['chains']} chains × ({report.settings['warmup']} warm-up + {report.settings['draws']} draws), "
        f"{report.seconds:.1f} s",
        "",
    ]
    truth = any(r.truth is not None for r in report.candidates)
    invalid = "" if report.converged else " (NOT VALID)"
    header = (
        f"{'rank':>4}  {'candidate':<24} {'E[true score]':>13} {f'{report.level:.0%} interval{invalid}':>17} "
        f"{'mean rank':>9} {f'{report.level:.0%} rank':>9} {'P(best)':>8} {'scores':>7}"
        + (f" {'truth':>7} {'true rank':>9}" if truth else "")
    )
    lines.append(header)
    for r in report.candidates:
        lines.append(
            f"{r.rank:>4}  {r.candidate:<24.24} {r.expected:>13.3f} {f'[{r.low:.3f}, {r.high:.3f}]':>17} "
            f"{r.rank_mean:>9.2f} {f'{r.rank_low}–{r.rank_high}':>9} {r.p_best:>8.3f} {r.scores:>7g}"
            + (f" {r.truth if r.truth is not None else '-':>7} {r.true_rank if r.true_rank is not None else '-':>9}" if truth else "")
        )
    if report.spearman_vs_truth is not None:
        lines.append(
            f"vs truth ({report.truth_field}): Spearman {report.spearman_vs_truth:.3f}, "
            f"{report.level:.0%} rank intervals cover {report.coverage_vs_truth:.0%} of the true ranks"
        )
    if report.people:
        lines += _people_lines(report)
    lines += ["", "judges (posterior mean confusion matrix: rows = true level, columns = assigned level; ρ = discrimination):"]
    for j in report.judges:
        extra = f"; self-judging: {', '.join(j.self_pairs)} ({report.settings['self_preference']})" if j.self_pairs else ""
        lines.append(f"  {j.judge}: {j.scores:g} scores, ρ = {j.rho:.2f}{extra}")
        lines += _fmt_matrix(j.confusion)
    rh = report.rhat
    lines += [
        "",
        f"diagnostics: R-hat (standardised expected scores — the ranking) {rh.get('ranking', float('nan')):.3f}, "
        f"centred {rh.get('expected_centred', float('nan')):.3f}, expected scores {rh.get('expected', float('nan')):.3f}, "
        f"max over all parameters {max(rh.values()) if rh else float('nan'):.3f}; "
        f"min ESS (ranking) {report.ess.get('ranking', float('nan')):.0f}; "
        f"{report.divergences} divergences; " + ("converged" if report.converged else "NOT converged"),
    ]
    if report.sensitivity:
        lines += ["", "sensitivity (§5.4; Spearman of each fit's expected scores with the base fit ω = 0, β_max = 5):"]
        for s in report.sensitivity:
            name = "ω" if s.parameter == "omega" else "β_max"
            rho = "-" if s.spearman_vs_base is None else f"{s.spearman_vs_base:.3f}"
            lines.append(
                f"  {name:>5} = {s.value:<4g} Spearman {rho:>6}   R-hat ranking {s.rhat_ranking:.3f} "
                f"(all {s.max_rhat:.3f})   {s.seconds:.0f} s"
            )
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines)


def _people_lines(report: SimplexReport) -> list[str]:
    """People's ranking beside the fit's (``--human``): where people would put the candidates, a
    bias every judge shares allowed for (``people_beside``)."""
    people = report.people or {}
    lines = [
        "",
        f"people's ranking — the fit moved by {people['labels']} people's labels, allowing each candidate a bias "
        f"all judges share (E[τ] = {people['tau']:.3f} on the expected-score scale):",
        f"{'rank':>4}  {'candidate':<24} {'score':>8} {'± sd':>7} {f'{report.level:.0%} rank':>9}",
    ]
    for r in people["ranking"]:
        interval = f"{r['rank_low']}–{r['rank_high']}"
        lines.append(f"{r['rank']:>4}  {r['candidate']:<24.24} {r['score']:>8.3f} {r['sd']:>7.3f} {interval:>9}")
    if "coverage_vs_truth" in people:
        lines.append(
            f"vs truth ({report.truth_field}): {report.level:.0%} rank intervals cover {people['coverage_vs_truth']:.0%} of the true ranks"
        )
    return lines
