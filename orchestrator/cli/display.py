"""How runs look in a terminal: the live progress display, the cost forecast line, the ranking and
judges tables that `run`, `resume`, `extend`, `status` and `rank` print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .common import ProgressLines, err_console, out_console

if TYPE_CHECKING:
    from ..records.reports import Group, JudgeEntry, Ranking, ReadAs, StatedReading


def run_display(total: int | None):
    """A rich progress display for a run; returns (context manager, event callback)."""
    progress = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}", markup=False),
        console=err_console,
        transient=False,
        disable=not err_console.is_terminal,
    )
    task = progress.add_task("round 0", total=total, info="")
    state: dict[str, Any] = {"entropy": None, "top": [], "max_adj": None, "round": 0, "calls": 0}
    # not a terminal (a log, CI, a notebook): plain lines instead of the bar, never silence
    lines = None if err_console.is_terminal else ProgressLines()

    def on_event(event) -> None:
        if event.kind == "loading":
            if lines is None:
                err_console.print(event.reason)
            else:
                lines.line(event.reason, force=True)
            return
        if event.kind == "draining":
            doing = f"{event.planned_requests} judge call(s)"
            if event.generations:
                doing += f" and {event.generations} answer generation(s)"
            limit = f" (at most {event.wait_limit_s:.0f} s)" if event.wait_limit_s else ""
            later = " (an answer not yet written is asked again by `orchestrator resume`)" if event.generations else ""
            err_console.print(
                f"interrupted: finishing the {doing} in flight{limit} so nothing paid for is lost; press Ctrl-C again to stop at once{later}"
            )
            return
        if event.kind == "judge_stopped":
            err_console.print(f"warning: {event.reason}; the other judges go on", soft_wrap=True)
            return
        if event.entropy is not None:
            state.update(entropy=event.entropy, top=event.top, max_adj=event.max_adjacent_reorder)
        spend = event.spend
        # rounds overlap (the next is planned while the last answers come in): an older round's
        # event never takes the line back, and the count never goes down
        state["round"] = shown_round = max(state["round"], event.round)
        state["calls"] = calls = max(state["calls"], spend.calls)
        info = f"{spend.tokens} tok"
        if spend.cached:
            info += f" ({spend.cached} from the cache)"
        if spend.usd:
            info += f" ${spend.usd:.4f}"
        if event.failed:
            info += f" · {event.failed} failed"
        if event.forecast is not None:
            state["forecast"] = event.forecast
        if state["entropy"] is not None:  # (the posterior's entropy, a differential one that can be negative, is for --details)
            info += f" · top {' > '.join(state['top'][:3])} · chance the closest pair is misordered {state['max_adj']:.0%}"
        if state.get("forecast") and event.kind != "stop":
            info += " · " + forecast_text(state["forecast"], short=True)
        progress.update(task, description=f"round {shown_round}", completed=calls, info=info)
        of = f" of {total}" if total else ""
        if lines is not None and event.kind in ("round", "judgment") and lines.line(f"round {shown_round}: {calls}{of} calls · {info}"):
            state["printed"] = (calls, spend.cached)
        if lines is not None and event.kind == "stop" and state.get("printed", (0, 0)) != (calls, spend.cached):
            # the last line shows the count the stop line gives, not one from seconds before it
            lines.line(f"round {shown_round}: {calls}{of} calls · {info}", force=True)
        if event.kind == "stop" and not err_console.is_terminal:
            cached = f" ({spend.cached} from the cache)" if spend.cached else ""
            err_console.print(f"stopped after round {shown_round}: {event.reason} ({calls} calls{cached}, {spend.tokens} tok)")
        if event.kind == "stop" and event.forecast is not None and getattr(event.reason, "kind", None) == "pilot":
            err_console.print("forecast: " + forecast_text(event.forecast), soft_wrap=True)

    return progress, on_event


def forecast_text(f: dict, *, short: bool = False) -> str:
    """The forecast of :mod:`orchestrator.run.forecast` in words."""
    usd = lambda v: f"${v:.4f}" if v < 1 else f"${v:,.2f}"  # noqa: E731
    if short:
        said = f"likely done after ≈{f['calls']} calls (9 runs in 10 by {f['calls_p90']})"
        return f"{said}, {usd(f['usd'])}" if f["usd"] else said
    stops = "the stopping rule" if f["stops_by"] == "the stopping rule" else f"{f['stops_by']} (before the stopping rule)"
    return (
        f"expected to stop by {stops} after ≈{f['calls']} calls (9 runs in 10 by {f['calls_p90']}), {f['tokens']:,} tokens "
        f"(9 in 10: {f['tokens_p90']:,}), {usd(f['usd'])} (9 in 10: {usd(f['usd_p90'])}); worst case {f['worst_calls']} calls, "
        f"{f['worst_tokens']:,} tokens, {usd(f['worst_usd'])} (estimated after {f['after_calls']} calls)"
        + (f"; ≈{f['answers']} answers generated (p90 {f['answers_p90']}) of {f['answers_of']} possible" if "answers" in f else "")
    )


def print_ranking(ranking: Ranking, limit_groups: int | None = None, details: bool = False) -> None:
    """``rank``'s text: plain words first — who leads and how sure, which neighbours are still
    open, whether each judge can be trusted — and the model's internals (log-strength
    scores, posterior entropy, sharpness, precision, position bias) only with ``details``. Read
    from the typed record of ``rank --json`` (:class:`~orchestrator.records.reports.Ranking`), so
    the table and the JSON cannot drift apart."""
    for warning in ranking.warnings:  # first: what the judge can and cannot tell
        out_console.print(f"warning: {warning}", soft_wrap=True)
    if ranking.comparison is not None:  # a [compare] run: a decision, not a ranking
        c = ranking.comparison
        out_console.print(f"{c.sentence} (α = {c.alpha:g}; `orchestrator compare` exit code {c.exit_code})", soft_wrap=True)
    level = f"{int(ranking.level * 100)}%"
    for entry in ranking.groups[:limit_groups]:
        out_console.print(ranking_table(entry, level, details))
        if entry.not_judged:
            out_console.print(f"not judged (none of their answers could be generated): {', '.join(entry.not_judged)}", soft_wrap=True)
        _leaderboard_notes(entry, level)
        _group_notes(entry, ranking.information, level, details)
    if limit_groups is not None and len(ranking.groups) > limit_groups:
        out_console.print(f"… and {len(ranking.groups) - limit_groups} more groups (use --all or --json)")
    for candidate, reasons in sorted(ranking.flags.items()):
        out_console.print(f"flagged: {candidate}: {'; '.join(reasons)}", soft_wrap=True)
    for candidate, n in (ranking.answers or {}).items():  # candidate models: what their answers were and cost
        said = f"answers of {candidate} ({n['model']}): {n['generated']} generated of {n['prompts']} prompts"
        more = ", ".join(f"{n[k]} {k}" for k in ("failed", "truncated", "cached", "pending") if n.get(k))
        if details:
            latency = f", {n['mean_latency_s']} s each on average" if n.get("mean_latency_s") is not None else ""
            more = ", ".join(filter(None, [more, f"{n['prompt_tokens']}+{n['completion_tokens']} tokens, ${n['usd']:g}{latency}"]))
        out_console.print(said + (f" ({more})" if more else ""), soft_wrap=True)


def ranking_table(entry: Group, level: str, details: bool) -> Table:
    """One group's ranking: rank, candidate, rank interval; a leaderboard's Elo, win rate and prompts
    (rows in Elo order); PoE scores with ``details``; the truth where the data has one."""
    poe = entry.entropy is not None
    title = (
        f"{entry.group} · {entry.comparisons} comparisons"
        + (f" · max neighbour reorder probability {entry.max_adjacent_reorder}" if details else "")
        if poe
        else f"{entry.group} · {entry.comparisons} judgments · RAEE Elo gap (pooled or mean over judges)"
    )
    if entry.spearman_vs_truth is not None:
        title += f" · Spearman vs truth {entry.spearman_vs_truth}"
    table = Table(title=title)
    has_truth = any(r.truth is not None for r in entry.ranking)
    has_rate = any(r.win_rate is not None for r in entry.ranking)
    columns: tuple[tuple[str, str], ...]
    if has_rate:  # a leaderboard: rows, rank intervals and the Elo gap on prompts like these first; the pool's win rate beside
        columns = (("Elo", "right"), ("win rate % (" + level + ")", "right"), ("prompts", "right"))
    elif details or not poe:
        columns = (("score", "right"), ("± sd vs mean" if poe else "± sd", "right"))
    else:
        columns = ()
    for name, justify in (
        (("rank", "right"), ("candidate", "left"))
        + ((f"{level} rank interval", "center"),)
        + columns
        + ((("truth", "right"),) if has_truth else ())
    ):
        table.add_column(name, justify=justify, overflow="fold", no_wrap=name.startswith("win"))  # type: ignore[arg-type]
    for r in entry.ranking:
        cells = [str(r.rank), r.candidate, f"{r.rank_low}–{r.rank_high}"]
        if has_rate:
            rate = f"{r.win_rate:.1f} ({r.win_rate_low:.1f}–{r.win_rate_high:.1f})" if r.win_rate is not None else ""
            cells += [f"{r.score:+.0f}", rate, "" if r.prompts is None else str(r.prompts)]
        elif columns:
            cells += [f"{r.score:+.3f}", f"{r.sd:.3f}"]
        if has_truth:
            cells.append("" if r.truth is None else f"{r.truth:.3f}")
        table.add_row(*cells)
    return table


def _leaderboard_notes(entry: Group, level: str) -> None:
    """Under a leaderboard: which quantity is which, the intervals that hold together, a board's placements, the category boards."""
    if any(r.win_rate is not None for r in entry.ranking):
        out_console.print(
            "rows, rank intervals and Elo: on prompts like these (the superpopulation), rows in Elo order; win rate: "
            "against the anchor on the prompts judged in this pool (ties count ½; its interval shrinks to a point when "
            "every prompt is judged), so its order can differ where candidates were judged on different prompts",
            soft_wrap=True,
        )
        if any(r.win_rate_low_together is not None for r in entry.ranking):
            out_console.print(
                f"each interval holds on its own with {level}; intervals that hold all at once: "
                "`--json`'s win_rate_low_together / win_rate_high_together",
                soft_wrap=True,
            )
    if entry.board is not None:
        board = entry.board
        out_console.print(
            f"placed on the board {board.path} ({board.models} models, {board.prompts} prompts): "
            "win rates over the board's prompts, from the prompts each was judged on"
            + (f"; the board file is {board.file}" if board.file and not board.file.startswith("unchanged") else ""),
            soft_wrap=True,
        )
        for r in entry.ranking:
            if r.placement is not None:
                p = r.placement
                out_console.print(
                    f"  {r.candidate}: {p.win_rate:.1f}% ({p.win_rate_low:.1f}–{p.win_rate_high:.1f}) from "
                    f"{p.prompts} prompts; rank {p.board_rank_low}–{p.board_rank_high} among the board's "
                    f"{board.models} models" + ("" if p.in_range else " (beyond the board's range: its prompts predict it poorly)"),
                    soft_wrap=True,
                )
    for part in entry.slices:
        out_console.print(slice_table(part, level))


def _group_notes(entry: Group, information: dict[str, dict], level: str, details: bool) -> None:
    """Under any group: what the figures mean, the open neighbours, people's ranking, the judges."""
    poe = entry.entropy is not None
    if poe and details:
        out_console.print(
            "score: log-strength (a difference d gives P(win) = σ(d)); sd vs mean: its uncertainty against the field's mean; "
            f"posterior entropy {entry.entropy} nats (lower = more certain); docs/judges.md explains each figure",
            soft_wrap=True,
        )
    if poe:
        out_console.print(f"rank interval: the ranks each candidate holds with {level} probability", soft_wrap=True)
    if entry.ties:
        out_console.print(
            "too close to call (order not known, and the gap is small either way): " + "; ".join(" ≈ ".join(pair) for pair in entry.ties),
            soft_wrap=True,
        )
    if entry.close:
        out_console.print(
            "in this order with high probability, though the gap is small (within the stopping rule's tie margin): "
            + "; ".join(" > ".join(pair) for pair in entry.close),
            soft_wrap=True,
        )
    if entry.people:
        out_console.print(people_table(entry.group, entry.people, level))
    if details and entry.judges:
        out_console.print(judges_table([j.model_dump() for j in entry.judges]))
    elif entry.judges:
        for line in judge_lines(entry.judges, information):
            out_console.print(line, soft_wrap=True)


def slice_table(part: dict, level: str) -> Table:
    """One prompt category's leaderboard (``slices`` of a reference campaign's group)."""
    small = " — too few prompts for a category board (fewer than 5): read its ranks as unknown" if part.get("small") else ""
    table = Table(title=f"category {part['slice']} · {part['prompts']} prompts judged{small}")
    for name in ("rank", "candidate", f"win rate % ({level})", "prompts", f"{level} rank interval"):
        table.add_column(name, justify="left" if name == "candidate" else "right", no_wrap=name.startswith("win"))
    for r in part["ranking"]:
        rate = f"{r['win_rate']:.1f} ({r['win_rate_low']:.1f}–{r['win_rate_high']:.1f})"
        table.add_row(str(r["rank"]), r["candidate"], rate, str(r["prompts"]), f"{r['rank_low']}–{r['rank_high']}")
    return table


def people_table(group: str, people: dict, level: str) -> Table:
    """People's ranking beside the judges' (``replay --human``, ``rank`` of a run file with labels)."""
    table = Table(
        title=f"{group}: people's ranking — the judges' posterior with {people['labels']} people's labels (E[τ] = {people['tau']:.2f})"
    )
    for name, justify in (
        ("rank", "right"),
        ("candidate", "left"),
        ("score", "right"),
        ("± sd", "right"),
        (f"{level} rank interval", "center"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in people["ranking"]:
        table.add_row(
            str(row["rank"]), row["candidate"], f"{row['score']:+.3f}", f"{row['sd']:.3f}", f"{row['rank_low']}–{row['rank_high']}"
        )
    return table


def read_words(read: ReadAs | None) -> str:
    """`` read from …`` for a judge line: how its probabilities were read and what that costs."""
    if read is None:
        return ""
    if read.method == "verdict" and read.stated is not None:
        return f" (read from one verdict per call, no log-probabilities; {stated_words(read.stated)}; {read.completions} completions)"
    if read.method == "verdict":
        return f" (read from one verdict per call, no log-probabilities: fitted as counts; {read.completions} completions)"
    if read.method == "samples":
        return (
            f" (read from {read.samples or 'k'} sampled verdicts per call, no log-probabilities: fitted as counts; "
            f"{read.completions} paid completions)"
        )
    if read.method == "logprobs":
        return " (read from its log-probabilities)"
    return ""


def stated_words(stated: StatedReading) -> str:
    """What a judge's stated confidence was worth: calibrated on its own repeated verdicts, or unused."""
    said = f"stated confidence {stated.mean:.0%} on average"
    if not stated.calibrated_on or stated.agreement is None or stated.at_mean is None:
        return f"{said}, not used: too few repeated verdicts to calibrate it on (fitted as counts)"
    return (
        f"{said}, calibrated on {stated.scored} of {stated.calibrated_on}, which repeat {stated.agreement:.0%} "
        f"of the time (its {stated.mean:.0%} reads as {stated.at_mean:.0%})"
    )


def judge_lines(judges: list[JudgeEntry], information: dict[str, dict]) -> list[str]:
    """One plain line per judge: how far it sides with the ranking, how often the first-shown
    answer wins, whether its verdicts carry information (``rank --details``: the figures)."""
    lines = []
    for j in judges:
        parts = [f"judge {j.judge}: {j.judgments} judgments{read_words(j.read_as)}"]
        # the mean probability, not the share of decisive verdicts: a noisier judge (verdicts drawn
        # from the same probabilities) then reads the same in expectation, never better
        if j.agreement_probability is not None:
            parts.append(
                f"puts {j.agreement_probability:.0%} of its probability on the side of the ranking fitted to all judgments (50%: a coin)"
            )
        elif j.agreement is not None:
            parts.append(f"sides with the ranking fitted to all judgments on {j.agreement:.0%} of its verdicts (50%: a coin)")
        test = information.get(j.judge) or {}
        share = test.get("first_share")
        if test.get("first_probability") is not None:
            parts.append(f"the first-shown answer gets {test['first_probability']:.0%} of it on average (50%: no position bias)")
        elif share is not None:
            parts.append(f"the first-shown answer wins {share:.0%} of them (50%: no position bias)")
        if test.get("p_value") is not None:
            if test["p_value"] >= 0.05:
                parts.append("no detectable information about the answers")
            elif share is not None and not 0.05 < share < 0.95:
                side = "first" if share >= 0.95 else "second"
                parts.append(f"it picks the {side}-shown answer nearly every time; only how sure it is depends on the answers")
            else:
                parts.append("its verdicts follow the answers")
        lines.append("; ".join(parts))
    return lines


def judges_table(judges: list[dict]) -> Table:
    """Per-judge reliability: sharpness t (95% interval), precision κ, position bias Δ, length and
    style effects β (with ``model.control``; absolute scores have their own), graded verdicts' cut-points, agreement with the panel."""
    table = Table(title="judges")
    from ..api import presentation

    covariates = [c + kind for c in presentation.bias_covariates() for kind in ("", "_absolute")]
    controls = [c for c in covariates if any(c in j for j in judges)]
    graded = any("tie_cut" in j for j in judges)
    names = (
        ("judge", "judgments", "sharpness t (95%)", "precision κ", "position bias Δ")
        + tuple(f"{c.removesuffix('_absolute')} β (absolute)" if c.endswith("_absolute") else f"{c} β" for c in controls)
        + (("graded cuts c1 / c2",) if graded else ())
        + ("agrees with the ranking",)
    )
    for name in names:
        table.add_column(name, justify="left" if name == "judge" else "right")
    for j in judges:
        sharp = f"{j['sharpness']:.2f} ({j['sharpness_low']:.2f}–{j['sharpness_high']:.2f})" if "sharpness" in j else "—"
        precision = f"{j['precision']:.1f}" if "precision" in j else "—"
        delta = f"{j['delta']:+.3f} ± {j['delta_sd']:.3f}" if "delta" in j else "—"
        beta = tuple(f"{j[c]:+.2f} ± {j[f'{c}_sd']:.2f}" if c in j else "—" for c in controls)
        agreement = "—" if j["agreement"] is None else f"{j['agreement']:.0%}"
        cuts = (f"{j['tie_cut']:.2f} / {j['strong_cut']:.2f}" if "tie_cut" in j else "—",) if graded else ()
        table.add_row(j["judge"], str(j["judgments"]), sharp, precision, delta, *beta, *cuts, agreement)
    return table
