"""Starting, resuming, inspecting and exporting runs: the imperative shell the CLI calls."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .config import RunConfig, load_config
from .dataset import Dataset, load_dataset
from .errors import OrchestratorError, RunFailed
from .judging.client import Judge, JudgeProfile, LiteLLMJudge, get_profile
from .judging.templates import Template, get_template
from .outputs import open_output
from .loop import (
    DATASET_ANCHOR,
    RunEngine,
    RunEvent,
    build_groups_for,
    fit_groups,
    judge_price,
    judge_prices,
    reference_items,
    worst_case,
)
from .poe import PoEConfig, get_expert, rank_intervals, ranking_order
from .poe.uncertainty import adjacent_reorder_probabilities, entropy
from .secrets import redact_json
from .store import RunStore, create_run, open_run

__all__ = ["prepare", "dry_run", "start", "resume", "ranking", "status", "export", "EXPORT_FORMATS"]

EXPORT_FORMATS = ("jsonl", "csv", "parquet")


@dataclass
class Prepared:
    config: RunConfig
    dataset: Dataset
    templates: dict[str, Template]
    profiles: dict[str, JudgeProfile]


def _select_prompts(config: RunConfig, dataset: Dataset) -> Dataset:
    d = config.data
    if d.prompt_ids:
        missing = [p for p in d.prompt_ids if p not in dataset.prompts]
        if missing:
            raise OrchestratorError(f"data.prompt_ids: {missing[0]!r} is not a prompt with two or more responses in {d.prompts}")
        return dataset.subset(list(dict.fromkeys(d.prompt_ids)))
    if d.first:
        return dataset.subset(list(dataset.prompts)[: d.first])
    return dataset


def prepare(config: RunConfig) -> Prepared:
    """Load and check everything a run needs before anything is written or sent."""
    dataset = _select_prompts(config, load_dataset(config.data.prompts, config.data.responses))
    if config.data.truth is not None:
        missing = [(p, c) for p, by in dataset.responses.items() for c, r in by.items() if r.human.get(config.data.truth) is None]
        if missing:
            raise OrchestratorError(f"data.truth: response of {missing[0][1]!r} to prompt {missing[0][0]!r} has no human "
                                    f"score {config.data.truth!r}")
    if config.reference is not None:
        templates = {"reference": get_template(config.reference.template)}
        if templates["reference"].kind != "reference":
            raise OrchestratorError(f"reference.template: {templates['reference'].name!r} is a "
                                    f"{templates['reference'].kind} template, not a reference-anchored one")
        reference_items(dataset, config.reference.anchor, config.seed)
    elif config.absolute is not None:
        templates = {"absolute": get_template(config.absolute.template)}
        template = templates["absolute"]
        if template.kind != "absolute":
            raise OrchestratorError(f"absolute.template: {template.name!r} is a {template.kind} template, not an "
                                    "absolute one")
        if template.options != [str(m) for m in range(1, len(template.options) + 1)]:
            raise OrchestratorError(f"absolute.template: {template.name!r} has options {template.options}; the simplex "
                                    "model needs the levels 1..M")
    else:
        templates = {"pairwise": get_template(config.judging.pairwise_template)}
        if templates["pairwise"].kind != "pairwise":
            raise OrchestratorError(f"judging.pairwise_template: {templates['pairwise'].name!r} is a {templates['pairwise'].kind} template")
    if config.model.absolute_warm_start and config.absolute is None:
        templates["absolute"] = get_template(config.judging.absolute_template)
        if templates["absolute"].kind != "absolute":
            raise OrchestratorError(f"judging.absolute_template: {templates['absolute'].name!r} is a {templates['absolute'].kind} template")
    attribute = config.judging.attribute
    for role, template in templates.items():
        if "attribute" in template.placeholders and attribute is not None and attribute not in template.attributes:
            raise OrchestratorError(f"judging.attribute: {attribute!r} is not an attribute of template {template.name!r} "
                                    f"(choose one of {', '.join(template.attributes)})")
    profiles = {name: get_profile(name) for name in config.judging.judges}
    check_judges(profiles, templates, api_base=config.dispatch.api_base)
    build_groups_for(dataset, config.data.scope)
    prepared = Prepared(config, dataset, templates, profiles)
    check_budget_fits(prepared)
    return prepared


def _unit(prepared: Prepared) -> tuple[str, int]:
    """The template role of the first requests a run plans, and how many requests one unit of it
    is (a comparison for every judge and order, an item for every judge, repeat and order)."""
    config = prepared.config
    judges = len(prepared.profiles)
    if config.reference is not None:
        return "reference", judges * config.reference.repeats * (2 if config.reference.both_orders else 1)
    if config.absolute is not None:
        return "absolute", judges * config.absolute.repeats
    if config.model.absolute_warm_start:
        return "absolute", judges
    return "pairwise", judges * (2 if config.model.debias == "permutation" else 1)


def check_budget_fits(prepared: Prepared) -> None:
    """Refuse a budget that cannot pay for one unit of work before anything is created (a run that
    could only end empty). Tokens and USD are checked against the cheapest possible request: the
    shortest prompt with its shortest responses, at its worst case.

    Raises:
        OrchestratorError: naming the budget field, what it allows and what one unit needs.
    """
    config, dataset = prepared.config, prepared.dataset
    b = config.budget
    role, calls = _unit(prepared)
    if b.max_calls is not None and b.max_calls < calls:
        raise OrchestratorError(f"budget.max_calls = {b.max_calls} cannot pay for one {role} request set: it takes {calls} "
                                f"calls ({len(prepared.profiles)} judge(s)"
                                + (", both orders" if role == "pairwise" and calls > len(prepared.profiles) else "") + ")")
    if b.max_tokens is None and b.max_usd is None:
        return
    template = prepared.templates[role]
    local = {n for n, p in prepared.profiles.items() if _is_local(p, config.dispatch.api_base)}
    prices = judge_prices(prepared.profiles, local, max_usd=b.max_usd)

    def size(pid: str) -> tuple[int, list[str]]:
        texts = sorted((r.text for r in dataset.responses[pid].values()), key=len)[:2]
        return len(dataset.prompts[pid].text) + sum(len(t) for t in texts), texts

    pid = min(dataset.responses, key=lambda p: size(p)[0])
    texts = size(pid)[1]
    prompt = dataset.prompts[pid]
    values = {"context": prompt.text, "question": prompt.text, "reference": prompt.reference or texts[0],
              "response": texts[-1], "A": texts[0], "B": texts[-1]}
    tokens, usd = 0, 0.0
    per_judge = calls // len(prepared.profiles)
    for name, profile in prepared.profiles.items():
        messages = template.render(values, attribute=config.judging.attribute, prefill=profile.prefill)
        t, u = worst_case(messages, template, profile, prices[name])
        tokens += per_judge * t
        usd += per_judge * u
    if b.max_tokens is not None and b.max_tokens < tokens:
        raise OrchestratorError(f"budget.max_tokens = {b.max_tokens} cannot pay for one {role} request set: even the "
                                f"shortest may need {tokens} tokens (worst case: every prompt byte a token, plus the "
                                f"template's max_tokens)")
    if b.max_usd is not None and b.max_usd < usd:
        raise OrchestratorError(f"budget.max_usd = {b.max_usd} cannot pay for one {role} request set: even the shortest "
                                f"may cost ${usd:.6f} at the judges' prices (worst case)")


def check_judges(profiles: dict[str, JudgeProfile], templates: dict[str, Template], *, api_base: str | None) -> None:
    """Refuse combinations that would only produce failed (but counted) calls."""
    import os

    for name, profile in profiles.items():
        for template in templates.values():
            if template.prefill and not profile.prefill and template.read == "first_token":
                raise OrchestratorError(
                    f"judge {name!r} does not continue an assistant prefix, which template {template.name!r} reads its "
                    f"answer after; use {template.name}-noprefill (or a judge with prefill = true)")
        if profile.api_key_env and not os.environ.get(profile.api_key_env) and not api_base:
            raise OrchestratorError(f"judge {name!r} needs its API key in the environment variable {profile.api_key_env}")


def _is_local(profile: JudgeProfile, api_base: str | None) -> bool:
    base = api_base or profile.api_base or ""
    return bool(profile.embedded) or base.startswith(("http://127.", "http://localhost", "http://[::1]"))


def dry_run(prepared: Prepared) -> dict:
    """What the run would ask at most, and its worst-case tokens and cost, without sending anything."""
    config, dataset = prepared.config, prepared.dataset
    groups = build_groups_for(dataset, config.data.scope)
    per_judge_pairs = 0
    for group in groups:
        if group.key == "global":
            per_judge_pairs += sum(len(ps) * 2 for ps in group.prompts.values())
        else:  # per prompt, and items (compared only within their prompt)
            per_judge_pairs += sum(len(by) * (len(by) - 1) for p, by in dataset.responses.items()
                                   if group.member(p, next(iter(by))) is not None)
    n_abs = sum(len(g.names) for g in groups) if config.model.absolute_warm_start else 0
    n_judges = len(prepared.profiles)
    possible = n_judges * (per_judge_pairs + n_abs)
    ref = config.reference
    if ref is not None:
        anchor, _, _, per_candidate = reference_items(dataset, ref.anchor, config.seed)
        possible = n_judges * ref.repeats * (2 if ref.both_orders else 1) * sum(len(ps) for ps in per_candidate.values())
    if config.absolute is not None:
        possible = n_judges * config.absolute.repeats * dataset.n_responses
    calls = possible if config.budget.max_calls is None else min(possible, config.budget.max_calls)
    # Mean worst case of a request, from the first prompts' pairs.
    rows = []
    template = prepared.templates["reference" if ref is not None else "absolute" if config.absolute is not None else "pairwise"]
    for name, profile in prepared.profiles.items():
        price = judge_price(profile, _is_local(profile, config.dispatch.api_base)) or (0.0, 0.0)
        for pid, by_cand in list(dataset.responses.items())[:3]:
            prompt = dataset.prompts[pid]
            cands = sorted(by_cand)
            if ref is not None:
                anchor_text = prompt.reference if anchor == DATASET_ANCHOR else getattr(by_cand.get(anchor), "text", None)
                if not anchor_text:
                    continue
                pairs = [(anchor_text, by_cand[c].text) for c in cands if c != anchor]
            elif config.absolute is not None:
                pairs = [("", by_cand[c].text) for c in cands]
            else:
                pairs = [(by_cand[a].text, by_cand[b].text) for a, b in zip(cands, cands[1:])]
            for text_a, text_b in pairs:
                values = {"context": prompt.text, "question": prompt.text, "A": text_a, "B": text_b,
                          "reference": text_a if ref is not None else prompt.reference or "", "response": text_b}
                messages = template.render(values, attribute=config.judging.attribute, prefill=profile.prefill)
                rows.append(worst_case(messages, template, profile, price))
    tokens = sum(t for t, _ in rows) / len(rows)
    usd = sum(u for _, u in rows) / len(rows)
    est_tokens = int(calls * tokens)
    est_usd = calls * usd
    if config.budget.max_tokens is not None:
        est_tokens = min(est_tokens, config.budget.max_tokens)
    if config.budget.max_usd is not None:
        est_usd = min(est_usd, config.budget.max_usd)
    return {
        "run_file": str(config.run_path),
        "prompts": len(dataset.prompts),
        "responses": dataset.n_responses,
        "groups": len(groups),
        "judges": list(prepared.profiles),
        "possible_requests": possible,
        "max_calls": calls,
        "max_tokens": est_tokens,
        "max_usd": round(est_usd, 6),
        "worst_case_tokens_per_request": int(tokens),
        "note": "upper bounds: every prompt byte counted as a token, completions at max_tokens",
    }


@contextlib.contextmanager
def judges_for(profiles: dict[str, JudgeProfile], *, api_base: str | None, parallel: int = 1) -> Iterator[tuple[dict[str, Judge], set[str]]]:
    """LiteLLM judges for the profiles, starting (and finally stopping) embedded servers as needed."""
    from .judging.embedded import EmbeddedServer

    with contextlib.ExitStack() as stack:
        servers: dict[str, EmbeddedServer] = {}
        judges: dict[str, Judge] = {}
        for name, profile in profiles.items():
            base = api_base
            if profile.embedded and not api_base:
                if profile.embedded not in servers:
                    servers[profile.embedded] = stack.enter_context(EmbeddedServer(profile.embedded, parallel=parallel))
                base = servers[profile.embedded].api_base
            judges[name] = LiteLLMJudge(profile, api_base=base)
        yield judges, {n for n, p in profiles.items() if _is_local(p, api_base)}


def _execute(store: RunStore, config: RunConfig, templates: dict[str, Template], profiles: dict[str, JudgeProfile],
             progress: Callable[[RunEvent], None] | None, judges: dict[str, Judge] | None) -> str:
    if judges is not None:
        local = {n for n, p in profiles.items() if _is_local(p, config.dispatch.api_base)}
        engine = RunEngine(store, config, judges, profiles, templates, local=local, progress=progress)
        return asyncio.run(engine.run())
    with judges_for(profiles, api_base=config.dispatch.api_base,
                    parallel=min(config.dispatch.concurrency, 4)) as (made, local):
        engine = RunEngine(store, config, made, profiles, templates, local=local, progress=progress)
        return asyncio.run(engine.run())


def start(config: str | Path | RunConfig, *, progress: Callable[[RunEvent], None] | None = None,
          judges: dict[str, Judge] | None = None, runs_dir: Path | None = None) -> tuple[Path, str]:
    """Create the run file from a config (a TOML path or a loaded one) and run it; returns
    (run file, stop reason).

    Everything is checked before the file is created (:func:`prepare`, the same checks as a dry
    run); should the run still fail before its first request is written (an embedded judge that
    does not start), the file is removed again, so the same command can simply be repeated.

    Raises:
        OrchestratorError: a problem with the config, data, judges or budget; nothing is written.
        RunFailed: the run ran but no judgment succeeded (the file is kept, marked ``failed``).
    """
    if not isinstance(config, RunConfig):
        config = load_config(config)
    if runs_dir is not None:
        config = config.model_copy(update={"runs_dir": runs_dir})
    prepared = prepare(config)
    # credentials in URLs (dispatch.api_base) are not stored: resume asks for them again
    store = create_run(config.run_path, name=config.name, config=redact_json(config.to_json()), seed=config.seed,
                       dataset=prepared.dataset, templates=prepared.templates)
    try:
        with store:
            reason = _execute(store, config, prepared.templates, prepared.profiles, progress, judges)
    except RunFailed:
        raise
    except OrchestratorError:
        _remove_if_empty(config.run_path)
        raise
    return config.run_path, reason


def _remove_if_empty(path: Path) -> None:
    """Delete a run file that holds nothing but its snapshot (no request was ever planned)."""
    try:
        conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        try:
            planned = conn.execute("select count(*) from requests").fetchone()[0]
        finally:
            conn.close()
    except (sqlite3.Error, OSError):
        return
    if planned == 0:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def resume(path: str | Path, *, progress: Callable[[RunEvent], None] | None = None,
           judges: dict[str, Judge] | None = None, api_base: str | None = None) -> str | None:
    """Continue a run from its file; None when it had finished already.

    ``api_base`` replaces the config's ``dispatch.api_base``; it is needed when that address
    carried credentials (``https://user:pass@host``), which the run file does not store.

    Raises:
        OrchestratorError: not a run file, in use, a failed run, or credentials needed.
    """
    with open_run(path) as store:
        run = store.run
        if run["status"] == "finished":
            return None
        config = RunConfig.model_validate(store.config)
        if api_base is not None:
            config = config.model_copy(update={"dispatch": config.dispatch.model_copy(update={"api_base": api_base})})
        elif config.dispatch.api_base and "[REDACTED" in config.dispatch.api_base:
            raise OrchestratorError(f"{path}: the run's dispatch.api_base carried credentials, which are not stored; "
                                    "give the address again with --api-base URL")
        profiles = {name: get_profile(name) for name in config.judging.judges}
        check_judges(profiles, store.templates(), api_base=config.dispatch.api_base)
        return _execute(store, config, store.templates(), profiles, progress, judges)


def _campaign_group(title: str, n: int, names: list[str], score: dict[str, float], draws, sd: dict[str, float],
                    dataset: Dataset, truth: str | None, level: float) -> dict:
    """One ranking entry of a campaign (reference or absolute): candidates by score, shortest
    ``level`` rank intervals from score draws ``(S, N)`` (columns in ``names`` order), truth."""
    import numpy as np

    from .poe import rank_intervals_from_draws

    intervals = rank_intervals_from_draws(np.asarray(draws), level=level)
    entries = []
    for k, c in enumerate(names):
        row = {"rank": k + 1, "candidate": c, "score": round(score[c], 3), "sd": round(sd[c], 3),
               "rank_low": int(intervals.lower[k]), "rank_high": int(intervals.upper[k])}
        if truth:
            values = [by[c].human.get(truth) for by in dataset.responses.values() if c in by]
            values = [v for v in values if v is not None]
            row["truth"] = round(sum(values) / len(values), 6) if values else None
        entries.append(row)
    entry = {"group": title, "comparisons": n, "entropy": None, "max_adjacent_reorder": None, "ranking": entries}
    values = [r.get("truth") for r in entries]
    if truth and len(entries) > 2 and None not in values and len(set(values)) > 1:
        from scipy.stats import spearmanr

        entry["spearman_vs_truth"] = round(float(spearmanr([-r["rank"] for r in entries], values).statistic), 4)
    return entry


def _reference_ranking(path: str | Path, config: RunConfig, dataset: Dataset, level: float) -> dict:
    """A reference campaign's ranking: RAEE Elo gaps (pooled over strong judges, else the mean over
    judges) with rank intervals from independent normal draws on the Elo scale, using the raw
    (superpopulation) SE."""
    import numpy as np

    from .fit import fit_raee, load_reference_judgments
    from .raee_report import leaderboard

    data, _ = load_reference_judgments(path, log=False)
    if len(data) == 0:
        return {"run": str(path), "scope": "reference", "level": level, "groups": []}
    report = fit_raee(path, soft=config.reference.soft if config.reference else False)
    out = []
    for anchor in dict.fromkeys(r.anchor for r in report.rows):
        board = leaderboard(report.rows, anchor)
        names = sorted(board, key=lambda c: (-board[c], c))
        se = {}
        for c in names:
            # the superpopulation SE: with every prompt of the pool judged the FPC one is 0
            rows = [r for r in report.rows if r.anchor == anchor and r.candidate == c and r.se_elo_raw is not None]
            pooled = [r for r in rows if r.judge == "pooled"]
            # unscreened judges may agree perfectly: Eq. (9) with ρ = 1, no 1/J shrinkage
            se[c] = pooled[0].se_elo_raw if pooled else float(np.sqrt(np.mean([r.se_elo_raw ** 2 for r in rows])))
        draws = np.random.default_rng(0).normal([board[c] for c in names], [se[c] for c in names], size=(4000, len(names)))
        out.append(_campaign_group(f"anchor {anchor}", int(np.sum(data.anchor == anchor)), names, board, draws, se,
                                   dataset, config.data.truth, level))
    return {"run": str(path), "scope": "reference", "level": level, "groups": out}


def _absolute_ranking(path: str | Path, config: RunConfig, dataset: Dataset, templates: dict, level: float) -> dict:
    """An absolute campaign's quick ranking: each candidate's mean expected level (judges averaged
    with equal weight), rank intervals from resampling the prompts (the simplex paper's bootstrap
    baseline). Judge quality is not modelled here — that is ``orchestrator fit simplex``."""
    import numpy as np

    from .offline.fit_simplex import load_absolute_judgments
    from .simplex import build_score_data
    from .simplex.baselines import simple_average

    records, _ = load_absolute_judgments(path, log=False)
    if not records:
        return {"run": str(path), "scope": "absolute", "level": level, "groups": []}
    levels = len(templates["absolute"].options)
    data = build_score_data(records, levels=levels, source=str(path))
    scores = data.item_scores(soft=True)
    mean = simple_average(scores)
    rng = np.random.default_rng(0)
    q = scores.shape[2]
    with np.errstate(invalid="ignore"):
        boot = np.stack([simple_average(scores[:, :, rng.integers(0, q, size=q)]) for _ in range(1000)])
    boot = np.where(np.isnan(boot), np.nanmean(boot, axis=0), boot)
    order = sorted(range(len(data.candidates)), key=lambda k: (-mean[k], data.candidates[k]))
    names = [data.candidates[k] for k in order]
    score = {data.candidates[k]: float(mean[k]) for k in order}
    sd = {data.candidates[k]: float(boot[:, k].std()) for k in order}
    group = _campaign_group(f"mean score 1–{levels} (bootstrap; judge quality: `orchestrator fit simplex RUN --levels "
                            f"{levels}`)", len(records), names, score, boot[:, order], sd, dataset, config.data.truth, level)
    return {"run": str(path), "scope": "absolute", "level": level, "groups": [group]}


def ranking(path: str | Path, *, level: float = 0.95) -> dict:
    """The run's current ranking per group: cold fits on every committed judgment, 95% rank intervals
    (for a reference campaign: the RAEE leaderboard per anchor)."""
    with open_run(path, write=False) as store:
        config = RunConfig.model_validate(store.config)
        dataset = store.dataset()
        judgments = list(store.judgments()) if config.reference is None and config.absolute is None else []
        templates = store.templates()
    if config.reference is not None:
        return _reference_ranking(path, config, dataset, level)
    if config.absolute is not None:
        return _absolute_ranking(path, config, dataset, templates, level)
    groups = build_groups_for(dataset, config.data.scope)
    poe = PoEConfig(expert=get_expert(config.model.expert), home_advantage=config.model.debias == "home")
    posteriors = fit_groups(groups, judgments, poe, debias=config.model.debias)
    truth = config.data.truth
    out = []
    for group, post in zip(groups, posteriors):
        intervals = rank_intervals(post, level=level)
        sd = post.cov.diagonal().sqrt()
        _, adj = adjacent_reorder_probabilities(post)
        rows = []
        for rank, c in enumerate(ranking_order(post.mean, group.names), start=1):
            row = {"rank": rank, "candidate": group.names[c], "score": round(float(post.mean[c]), 6),
                   "sd": round(float(sd[c]), 6), "rank_low": int(intervals.lower[c]), "rank_high": int(intervals.upper[c])}
            if truth:
                name = group.names[c]
                values = [by[group.candidate(name)].human.get(truth) for p, by in dataset.responses.items()
                          if group.member(p, group.candidate(name)) == name]
                values = [v for v in values if v is not None]
                row["truth"] = round(sum(values) / len(values), 6) if values else None
            rows.append(row)
        entry = {"group": group.key, "comparisons": post.n_comparisons, "entropy": round(entropy(post.cov), 4),
                 "max_adjacent_reorder": round(float(adj.max()), 4) if adj.numel() else 0.0, "ranking": rows}
        informed = post.n_comparisons > 0 or post.link is not None  # never statistics from no data
        entry["judged"] = informed
        if truth and len(rows) > 2 and informed:
            from scipy.stats import spearmanr

            values = [r["truth"] for r in rows]
            if None not in values and len(set(values)) > 1:
                entry["spearman_vs_truth"] = round(float(spearmanr([-r["rank"] for r in rows], values).statistic), 4)
        out.append(entry)
    return {"run": str(path), "scope": config.data.scope, "level": level, "groups": out}


def status(path: str | Path) -> dict:
    """Budget spent, rounds, state, and the uncertainty of the current ranking."""
    with open_run(path, write=False) as store:
        run = store.run
        config = RunConfig.model_validate(store.config)
        spend = store.spend()
        counts = {r["status"]: r["n"] for r in store.db.query("select status, count(*) as n from requests group by status")}
        failures = {r["error_type"] or "unknown": r["n"] for r in store.db.query(
            "select error_type, count(*) as n from judgments where status = 'failed' group by error_type")}
        rounds = store.last_round() + 1
    b = config.budget
    poe = config.reference is None and config.absolute is None  # campaigns have no PoE posterior
    rank = ranking(path)
    groups = rank["groups"]
    summary = {
        "run": str(path), "name": run["name"], "state": run["status"], "stop_reason": run["stop_reason"],
        "rounds": rounds, "requests": counts, "failures": failures,
        "spent": {"calls": spend.calls, "tokens": spend.tokens, "usd": round(spend.usd, 6)},
        "budget": {"calls": b.max_calls, "tokens": b.max_tokens, "usd": b.max_usd},
        "groups": len(groups),
        "mean_entropy": round(sum(g["entropy"] for g in groups) / len(groups), 4) if poe and groups else None,
        "max_adjacent_reorder": max(g["max_adjacent_reorder"] for g in groups) if poe and groups else None,
        "top": {g["group"]: [r["candidate"] for r in g["ranking"][:3]] for g in groups[:5]},
    }
    sp = [g["spearman_vs_truth"] for g in groups if "spearman_vs_truth" in g]
    if sp:
        summary["mean_spearman_vs_truth"] = round(sum(sp) / len(sp), 4)
    return summary


def _log_line(row: dict, anchor: str | None = None) -> dict:
    probs = json.loads(row["probs"])
    capped = json.loads(row["capped"])
    unresolved = json.loads(row["unresolved"])
    return {
        "kind": row["kind"], "judge": row["judge"], "prompt_id": row["prompt_id"],
        "candidates": json.loads(row["candidates"]), "probs": probs[0] if len(probs) == 1 else probs,
        **({"reference": anchor if anchor in json.loads(row["candidates"]) else json.loads(row["candidates"])[0]}
           if row["kind"] == "reference" else {}),
        "repeat": row.get("repeat", 0), "key": row["key"], "template": row["template"], "method": row["method"],
        "capped": capped[0] if len(capped) == 1 else capped, "unresolved": unresolved[0] if len(unresolved) == 1 else unresolved,
        "text": row["text"], "top_logprobs": json.loads(row["top_logprobs"]), "round": row["round"],
        "prompt_tokens": row["prompt_tokens"], "completion_tokens": row["completion_tokens"],
        "cost_usd": row["cost_usd"], "latency_s": row["latency_s"], "attempts": row["attempts"], "note": row["note"],
    }


CSV_COLUMNS = ["key", "round", "kind", "judge", "template", "prompt_id", "candidate_a", "candidate_b", "repeat", "status", "p_first",
               "probs", "method", "capped", "unresolved", "text", "prompt_tokens", "completion_tokens", "cost_usd",
               "latency_s", "attempts", "error_type", "error"]


def _flat(row: dict) -> dict:
    cands = json.loads(row["candidates"])
    return {**{c: row.get(c) for c in CSV_COLUMNS if c in row}, "candidate_a": cands[0],
            "candidate_b": cands[1] if len(cands) > 1 else None}


def export(path: str | Path, fmt: str, out: str | Path, *, include_failed: bool = False) -> int:
    """Write the run's judgments: ``jsonl`` (the judgment log ``orchestrator replay`` reads), ``csv`` or
    ``parquet`` (one row per judgment, option probabilities as JSON). Returns the number of rows."""
    if fmt not in EXPORT_FORMATS:
        raise OrchestratorError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    with open_run(path, write=False) as store:
        rows = list(store.judgments(ok_only=not include_failed))
        config = RunConfig.model_validate(store.config)
        anchor = (reference_items(store.dataset(), config.reference.anchor, config.seed)[0]
                  if config.reference is not None else None)
    binary = fmt == "parquet"
    if binary:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise OrchestratorError("--format parquet needs pyarrow: pip install 'llm-judge-orchestrator[parquet]'") from None
    with open_output(out, option="--out", inputs=[path], binary=binary) as fh:
        if fmt == "jsonl":
            for row in rows:
                if row["status"] == "ok":
                    fh.write(json.dumps(_log_line(row, anchor)) + "\n")
        elif fmt == "csv":
            writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            for row in rows:
                writer.writerow(_flat(row))
        else:
            table = pa.Table.from_pylist([_flat(r) for r in rows]) if rows else pa.table({c: [] for c in CSV_COLUMNS})
            pq.write_table(table, fh)
    return len(rows)
