"""The report as one self-contained HTML file: styles, script, charts (inline SVG) and data inlined,
nothing fetched. Texts of prompts and responses are stored once (a JSON block) and shown when a
judgment is opened, so a run of thousands of judgments stays a file a browser opens at once."""

from __future__ import annotations

import json
import math
import time
from html import escape
from typing import Any

from ..offline.judges.panel import JUDGE_PARAMETERS
from ..records.reports import Group, Ranking
from . import svg
from .assets import CSS, SCRIPT
from .data import ReportData
from .summary import summary_text

__all__ = ["render", "summary_text"]


def _num(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return escape(str(v))


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{_num(c)}</td>' if isinstance(c, (int, float)) and not isinstance(c, bool) else f"<td>{_num(c)}</td>"
            for c in row
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _ranking_section(data: ReportData, limit: int = 12) -> str:
    """The rankings as `rank` prints them, read from the same typed record
    (:class:`~orchestrator.records.reports.Ranking`): a leaderboard's rows in Elo order with the
    pool's win rate beside, and a board's placements."""
    ranking = Ranking.model_validate(data.ranking) if data.ranking else None
    groups = ranking.groups if ranking is not None else []
    level = f"{round(100 * ranking.level)}%" if ranking is not None else "95%"
    parts = ['<section id="ranking"><h2>Ranking</h2>']
    if not groups:
        parts.append("<p>No judgments yet.</p>")
    for k, g in enumerate(groups):
        if k == limit:
            parts.append(f'<p class="muted">{len(groups) - limit} more rankings: see <code>orchestrator rank</code>.</p>')
            break
        extra = f" · Spearman with truth {g.spearman_vs_truth:.3f}" if g.spearman_vs_truth is not None else ""
        parts.append(f"<h3>{escape(g.group)} <span class='muted'>({g.comparisons} judgments{extra})</span></h3>")
        if g.ranking:
            parts.append(svg.rank_intervals([r.model_dump() for r in g.ranking], title=f"rank intervals: {g.group}"))
            parts.append(_group_table(g, level))
        if g.not_judged:
            parts.append(f"<p>Not judged (none of their answers could be generated): {escape(', '.join(g.not_judged))}</p>")
        for part in g.slices:  # per prompt category (reference campaigns)
            small = "; too few for a category board: read its ranks as unknown" if part.get("small") else ""
            parts.append(f"<h4>category {escape(part['slice'])} <span class='muted'>({part['prompts']} prompts judged{small})</span></h4>")
            parts.append(
                _table(
                    ["rank", "candidate", "win rate %", f"{level} interval", "prompts", f"{level} rank interval"],
                    [
                        [
                            r["rank"],
                            r["candidate"],
                            r["win_rate"],
                            f"{r['win_rate_low']}–{r['win_rate_high']}",
                            r["prompts"],
                            f"{r['rank_low']}–{r['rank_high']}",
                        ]
                        for r in part["ranking"]
                    ],
                )
            )
        if g.ties:
            parts.append("<p>Practical ties (within δ, order not known): " + ", ".join(escape(" = ".join(t)) for t in g.ties) + "</p>")
        if g.close:
            parts.append("<p>Ordered, but the gap is below δ: " + ", ".join(escape(" > ".join(t)) for t in g.close) + "</p>")
    flags = ranking.flags if ranking is not None else {}
    if flags:
        items = "".join(f"<li><b>{escape(c)}</b>: {escape('; '.join(reasons))}</li>" for c, reasons in sorted(flags.items()))
        parts.append(
            f'<div class="flags"><p>Flagged candidates (their place may reflect the judge, not quality):</p><ul>{items}</ul></div>'
        )
    answers = ranking.answers if ranking is not None else None
    if answers:  # candidate models: what was generated, with its provenance
        items = "".join(
            f"<li><b>{escape(c)}</b> ({escape(str(n['model']))}): {n['generated']} answers generated of {n['prompts']} prompts, "
            f"{n['failed']} failed, {n['truncated']} truncated, {n['cached']} from the cache; "
            f"{n['prompt_tokens']}+{n['completion_tokens']} tokens, ${n['usd']:g}</li>"
            for c, n in answers.items()
        )
        parts.append(
            f'<div class="answers"><p>Answers of the candidate models, generated where they were judged:</p><ul>{items}</ul></div>'
        )
    parts.append("</section>")
    return "".join(parts)


def _group_table(g: Group, level: str) -> str:
    """One group's table: a leaderboard (reference campaigns) as `rank` prints it — Elo (the rows'
    order, on prompts like these), the pool's win rate and prompts, and a board placement; a
    ranking its scores."""
    has_truth = any(r.truth is not None for r in g.ranking)
    truth = lambda r: [r.truth] if has_truth else []  # noqa: E731
    if any(r.win_rate is not None for r in g.ranking):
        headers = ["rank", "candidate", f"{level} rank interval", "Elo", f"win rate % ({level})", "prompts"]
        rows = [
            [
                r.rank,
                r.candidate,
                f"{r.rank_low}–{r.rank_high}",
                round(r.score),
                _rate(r.win_rate, r.win_rate_low, r.win_rate_high),
                r.prompts,
            ]
            + truth(r)
            for r in g.ranking
        ]
        if g.board is not None and any(r.placement is not None for r in g.ranking):
            headers.append(f"on the board ({g.board.models} models)")
            for row, r in zip(rows, g.ranking):
                p = r.placement
                placed = f"{_rate(p.win_rate, p.win_rate_low, p.win_rate_high)}, rank {p.board_rank_low}–{p.board_rank_high}" if p else ""
                row.insert(6, placed)
        note = (
            "<p class='muted'>rows, rank intervals and Elo: on prompts like these (rows in Elo order); win rate: against the "
            "anchor on the prompts judged in this pool (ties count ½), so its order can differ where candidates were judged on "
            "different prompts.</p>"
        )
        return _table(headers + (["truth"] if has_truth else []), rows) + note
    headers = ["rank", "candidate", "score", "sd vs mean" if g.entropy is not None else "sd", f"{level} rank interval"]
    rows = [[r.rank, r.candidate, r.score, r.sd, f"{r.rank_low}–{r.rank_high}"] + truth(r) for r in g.ranking]
    return _table(headers + (["truth"] if has_truth else []), rows)


def _rate(rate: float | None, low: float | None, high: float | None) -> str:
    return "" if rate is None or low is None or high is None else f"{rate:.1f} ({low:.1f}–{high:.1f})"


def _campaign_section(data: ReportData) -> str:
    """Reference campaigns: the full RAEE report (per judge and pooled rows, judge screening, anchor
    diagnostics); absolute campaigns: how to fit the simplex model on the run."""
    config = data.config
    if data.raee_text is not None:
        return f"<section id='raee'><h2>RAEE: reference-anchored Elo</h2><pre>{escape(data.raee_text)}</pre></section>"
    if config.absolute is not None:
        levels = len(next(iter(r.probs[0] for r in data.judgments if r.probs), {})) or 5
        return (
            "<section id='simplex'><h2>Bayesian simplex model</h2><p>The ranking above averages the judges' scores with equal "
            f"weight (bootstrap over prompts). Judge quality as epistemic uncertainty: <code>orchestrator fit simplex {escape(data.path.name)} "
            f"--levels {levels}</code> (MCMC, about a minute).</p></section>"
        )
    return ""


def _efficiency_section(data: ReportData) -> str:
    c = data.curve
    parts = ['<section id="efficiency"><h2>Efficiency</h2><div class="charts">']
    uncertainty = {"max P(reorder)": [(p["calls"], p["max_adjacent_reorder"]) for p in c if p["max_adjacent_reorder"] is not None]}
    parts.append(
        svg.line_chart(uncertainty, title="uncertainty against calls", xlabel="judge calls", ylabel="probability", y_range=(0.0, 0.5))
    )
    if any(p["spearman"] is not None for p in c):
        for axis, label in (("calls", "judge calls"), ("usd", "USD")):
            if axis == "usd" and not any(p["usd"] for p in c):
                continue
            points = [(p[axis], p["spearman"]) for p in c if p["spearman"] is not None]
            title = f"Spearman with the truth against {'calls' if axis == 'calls' else 'USD'}"
            parts.append(svg.line_chart({"Spearman vs truth": points}, title=title, xlabel=label, ylabel="Spearman", y_range=(-1.0, 1.0)))
    parts.append("</div>")
    if not c:
        parts.append("<p>No judgments yet.</p>")
    parts.append("</section>")
    return "".join(parts)


def _spend_section(data: ReportData) -> str:
    rows = data.spend_per_round
    parts = ['<section id="spend"><h2>Spend per round</h2><div class="charts">']
    parts.append(svg.bar_chart([(str(k), float(n)) for k, n, _, _ in rows], title="calls per round", ylabel="calls"))
    if any(u for _, _, u, _ in rows):
        parts.append(svg.bar_chart([(str(k), u) for k, _, u, _ in rows], title="USD per round", ylabel="USD"))
    parts.append("</div>")
    kinds = {r["round"]: r["kind"] for r in data.rounds}
    parts.append(_table(["round", "kind", "calls", "tokens", "USD"], [[k, kinds.get(k, ""), n, t, u] for k, n, u, t in rows]))
    parts.append("</section>")
    return "".join(parts)


def _judges_section(data: ReportData) -> str:
    parts = ['<section id="judges"><h2>Judges</h2>']
    headers = [
        "judge",
        "calls",
        "failed",
        "USD",
        "pairwise",
        "absolute",
        "first shown wins",
        "mean P(first)",
        "ECE",
        "temperature",
        "ECE after",
    ]
    table_rows = []
    for judge, j in data.judges.items():
        cal = j.get("calibration") or {}
        table_rows.append(
            [
                judge,
                j["calls"],
                j["failed"],
                j["usd"],
                j["pairwise"],
                j["absolute"],
                j["first_shown_wins"],
                j["mean_p_first"],
                cal.get("ece"),
                cal.get("temperature"),
                cal.get("ece_after"),
            ]
        )
    parts.append(_table(headers, table_rows))
    parts.append(
        '<p class="muted">First shown wins: the share of its comparisons in which the judge preferred the answer shown first (½ without '
        "position bias). ECE: expected calibration error of P(first better) against the reference scores, before and after the "
        "temperature that fits them best (PoE App. B).</p>"
    )
    fitted = [(judge, row) for judge, j in data.judges.items() for row in j.get("fit", [])]
    if fitted:
        parts.append("<h3>Reliability in the posterior</h3>")
        keys = [*JUDGE_PARAMETERS, "agreement", "judgments"]  # what the rank JSON's judge entries carry
        present = [k for k in keys if any(k in row for _, row in fitted)]
        parts.append(
            _table(
                ["judge", "ranking"] + present, [[judge, row.get("group")] + [row.get(k) for k in present] for judge, row in fitted[:60]]
            )
        )
    parts.append(_biases_table(data, fitted))
    charts = [
        svg.reliability_diagram(j["calibration"]["bins"], j["calibration"]["bins_after"], title=f"calibration: {judge}")
        for judge, j in data.judges.items()
        if j.get("calibration")
    ]
    if charts:
        parts.append('<div class="charts">' + "".join(charts) + "</div>")
    parts.append("</section>")
    return "".join(parts)


def _biases_table(data: ReportData, fitted: list[tuple[str, dict]]) -> str:
    """Judge biases: position (first shown wins, Δ) and length (β, with length control)."""
    from ..poe.covariates import STYLE

    def effect(value, sd) -> str:
        return "—" if value is None else f"{value:+.3f} ± {sd:.3f}" if sd is not None else f"{value:+.3f}"

    rows = []
    for judge, j in data.judges.items():
        mine = [row for name, row in fitted if name == judge]
        first = mine[0] if len(mine) == 1 else {}

        def taste(c: str, named: bool = False) -> str:  # β of pairwise and of absolute judgments, where fitted
            shown = [
                f"{'absolute ' if a else ''}{effect(first[c + a], first.get(c + a + '_sd'))}" for a in ("", "_absolute") if c + a in first
            ]
            return f"{c} " * named + ", ".join(shown) if shown else ""

        length = taste("length") or "not fitted"
        style = "; ".join(t for t in (taste(c, named=True) for c in STYLE) if t) or "not fitted"
        own = taste("self") or "not fitted"
        longer = "—" if j.get("prefers_longer") is None else f"{j['prefers_longer']:.1%}"
        if j.get("reference_prefers_longer") is not None:
            longer += f" (reference {j['reference_prefers_longer']:.1%})"
        rows.append([judge, j["first_shown_wins"], effect(first.get("delta"), first.get("delta_sd")), longer, length, style, own])
    note = (
        '<p class="muted">Position: the share of comparisons won by the answer shown first, and the fitted home advantage Δ '
        '(<code>debias = "home"</code>; Δ &lt; 0 favours the first shown). Longer answer wins: the share of its decisive '
        "comparisons of answers of different lengths won by the longer one, beside the reference scores' share on the same "
        "pairs (people's taste, where the data has reference scores). Length: the judge's taste β for the longer answer "
        "(logit per unit of (ℓ<sub>A</sub> − ℓ<sub>B</sub>)/(ℓ<sub>A</sub> + ℓ<sub>B</sub>)), fitted with "
        '<code>model.control = ["length"]</code> in a global ranking; style: the same for markdown headers, list items and bold '
        '(<code>"style"</code>); self: its preference for answers of its own model family (<code>"self"</code> with '
        "<code>model.families</code>); reference campaigns: "
        "<code>orchestrator fit raee RUN --control length</code>.</p>"
    )
    headers = ["judge", "first shown wins", "position Δ", "longer answer wins", "length β", "style β", "self β"]
    return "<h3>Judge biases</h3>" + _table(headers, rows) + note


def _answer(r) -> str:
    if r.status != "ok":
        return f"failed: {r.error_type or 'error'}"
    if not r.probs:
        return "—"
    first = r.probs[0]
    best = max(first, key=first.get)
    if r.kind == "absolute":
        mean = sum(float(k) * v for k, v in first.items()) / max(sum(first.values()), 1e-12)
        return f"score {best} (mean {mean:.2f})"
    return f"{best}" + (f" · P(A) {r.p_first:.3f}" if r.p_first is not None else "")


def _judgments_section(data: ReportData) -> str:
    parts = [f'<section id="judgments"><h2>Judgments ({len(data.judgments)})</h2>']
    parts.append('<input id="filter" type="search" placeholder="filter: judge, prompt, candidate, answer…">')
    for r in sorted(data.judgments, key=lambda r: (r.round, r.key)):
        attrs = {
            "prompt": r.prompt_id,
            "candidates": json.dumps(r.candidates),
            "probs": json.dumps(r.probs),
            "answer": r.text or "",
            "error": r.error or "",
        }
        attr_text = " ".join(f'data-{k}="{escape(v, quote=True)}"' for k, v in attrs.items())
        label = f"round {r.round} · {r.judge} · {r.kind} · {r.prompt_id} · {' vs '.join(r.candidates)} → {_answer(r)}"
        parts.append(f'<details class="judgment" {attr_text}><summary>{escape(label)}</summary><div class="body"></div></details>')
    parts.append("</section>")
    return "".join(parts)


def _texts_block(data: ReportData) -> str:
    texts = {
        "prompts": {p.id: p.text for p in data.dataset.prompts.values()},
        "responses": {p: {c: r.text for c, r in by.items() if not data.dataset.pending(p, c)} for p, by in data.dataset.responses.items()},
    }
    return '<script type="application/json" id="texts">' + script_json(texts) + "</script>"


def script_json(value: object) -> str:
    """JSON that no text inside can end or re-enter: every ``<``, ``>`` and ``&`` is written as a
    ``\\u`` escape, so ``</script>``, ``<!--<script>`` (which keeps the block open past its own end)
    and friends are never markup to the HTML parser; ``JSON.parse`` reads the same strings."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(data: ReportData) -> str:
    """The whole page."""
    name = str(data.run.get("name") or data.path.stem)
    judges = ", ".join(data.config.judging.judges) if data.config.judging.judges else "—"
    created = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(data.run.get("created_at") or 0)))
    nav = "".join(f'<a href="#{s}">{s.capitalize()}</a>' for s in ("ranking", "efficiency", "spend", "judges", "judgments"))
    return "".join(
        [
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>{escape(name)} — orchestrator report</title><style>{CSS}</style></head><body>",
            f"<header><h1>{escape(name)}</h1><p class='muted'>{escape(str(data.path.name))} · created {created} · judges: {escape(judges)} "
            f"· scope {escape(data.config.data.scope)} · seed {escape(str(data.run.get('seed')))}</p><nav>{nav}</nav></header>",
            f"<section id='summary'><h2>Summary</h2><p class='summary'>{escape(summary_text(data))}</p></section>",
            _ranking_section(data),
            _campaign_section(data),
            _efficiency_section(data),
            _spend_section(data),
            _judges_section(data),
            _judgments_section(data),
            _texts_block(data),
            f"<script>{SCRIPT}</script></body></html>",
        ]
    )
