"""Everything checked before a run file exists (the same checks as ``run --dry-run``): the config's
data, templates, judges and budget, and the dry run's estimate and smoke test."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import OrchestratorError
from ..judging.client import JudgeProfile, get_profile
from ..judging.providers import load_provider
from ..judging.sessions import run_closing_clients
from ..records.config import RunConfig
from ..records.dataset import Dataset, ResponseText, load_dataset
from ..records.named_classes import module_origin, modules_beside
from ..records.templates import Template, get_template
from ..store import refuse_existing
from .budget import judge_price, judge_prices, typical_cost, worst_case
from .judges import is_local, judges_for
from .requests import render_messages

__all__ = ["Prepared", "check_budget_fits", "check_judges", "check_new_run", "dry_run", "people_profile", "prepare", "smoke"]


@dataclass
class Prepared:
    config: RunConfig
    dataset: Dataset
    templates: dict[str, Template]
    profiles: dict[str, JudgeProfile]
    people: JudgeProfile | None = None
    """``judging.people``'s profile (kind ``human``), None without."""
    prompt_costs: tuple[int, int] | None = None  # a comparison's (prompts the data hold, judge calls a prompt takes)


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


def _load_with_models(config: RunConfig, *, min_candidates: int) -> Dataset:
    """The config's dataset with its candidate models answering every prompt; a candidate model
    that resolves to nothing is one line now, before anything is written."""
    if config.candidates:
        from ..generation.settings import resolve_candidates

        resolve_candidates(config.candidates, config.beside("judges"))
    return load_dataset(config.data.prompts, config.data.responses, min_candidates=min_candidates, models=list(config.candidates))


def _file_responses(dataset: Dataset) -> list[tuple[str, ResponseText]]:
    """``(prompt, response)`` of every response from the file (not a candidate model's)."""
    return [(p, r) for p, by in dataset.responses.items() for c, r in by.items() if c not in dataset.models]


def check_new_run(config: RunConfig) -> None:
    """Refuse a run name whose file exists already, as creating the run does (``run --dry-run``
    checks it too, so a dry run never passes where the run itself would refuse)."""
    refuse_existing(config.run_path)


EXAMPLE_PARAMETERS = {"task": '"answer questions about cooking"', "criterion": '"correct, complete and concise"'}


def prepare(config: RunConfig, *, need_keys: bool = True, plan_only: bool = False) -> Prepared:
    """Load and check everything a run needs before anything is written or sent (``run --dry-run``
    runs exactly these checks and :func:`check_new_run`); ``plan_only``: for a plan that pays nothing
    (``compare --plan``), a comparison that can reach no decision is not refused."""
    # against the prompts' reference texts one response per prompt is a comparison: a campaign of one
    # candidate ("evaluate my model against the anchor") needs no second one
    alone = config.reference is not None and config.reference.anchor == "dataset"
    modules_beside(config.config_dir)  # a config is code: the modules beside it can be named
    dataset = _select_prompts(config, _load_with_models(config, min_candidates=1 if alone else 2))
    if config.data.truth is not None:
        missing = [(p, r.candidate) for p, r in _file_responses(dataset) if r.human.get(config.data.truth) is None]
        if missing:
            raise OrchestratorError(
                f"data.truth: response of {missing[0][1]!r} to prompt {missing[0][0]!r} has no human score {config.data.truth!r}"
            )
    if "self" in config.model.control:  # the names the config could not check without the data
        from ..records.families import family_problem

        problem = family_problem(
            config.model.families,
            config.judging.judges,
            {c for by in dataset.responses.values() for c in by},
            where="model.families",
            control='model.control = ["self"]',
            every_judge=False,
        )
        if problem:
            raise OrchestratorError(problem)
    from .planners import planner_for  # after the data checks: the planners import torch

    planner = planner_for(config)
    strange = [table for table in config.planner_tables if table != planner.kind]
    if strange:
        raise OrchestratorError(
            f"[{strange[0]}] is not a section of a run config, nor the [{planner.kind}] section of the campaign kind "
            f"{config.selection.planner} reads"
        )
    templates = {role: get_template(name, config.beside("prompts")) for role, name in planner.roles(config).items()}
    planner.check(config, dataset, templates)
    attribute = config.judging.attribute
    for role, template in templates.items():
        unused = [name for name in ("task", "criterion") if getattr(config.judging, name) is not None and name not in template.placeholders]
        if unused:  # (a bare [reference] anchor took a summary template and ignored them without a word)
            raise OrchestratorError(
                f"judging.{unused[0]} is set, but template {template.name!r} has no ${{{unused[0]}}}: it would be ignored; "
                f"name one that takes it (generic-{template.kind}, in "
                f"{'reference.template' if template.kind == 'reference' else 'judging.' + role + '_template'}) or drop it"
            )
        for name in ("task", "criterion"):
            if name in template.placeholders and getattr(config.judging, name) is None:
                raise OrchestratorError(
                    f"judging.{name}: template {template.name!r} asks for ${{{name}}}; set it in [judging] "
                    f"(e.g. {name} = {EXAMPLE_PARAMETERS[name]})"
                )
        if "attribute" in template.placeholders and attribute is not None and attribute not in template.attributes:
            raise OrchestratorError(
                f"judging.attribute: {attribute!r} is not an attribute of template {template.name!r} "
                f"(choose one of {', '.join(template.attributes)})"
            )
    profiles = {name: get_profile(name, config.beside("judges")) for name in config.judging.judges}
    for name, profile in profiles.items():  # a provider that does not load is one line now, before anything is written
        if profile.provider:
            load_provider(profile.provider, judge=name)
    check_judges(profiles, templates, api_base=config.dispatch.api_base, need_keys=need_keys)
    if config.candidates and need_keys:
        check_candidate_keys(config)
    costs = None
    if config.compare is not None:  # the baseline run's judges checked, the horizon fixed and stored with the run
        from .planners.compare_plan import fixed_comparison

        config, costs = fixed_comparison(
            config, dataset, profiles, planner.possible_requests(config, dataset, len(profiles)), check=not plan_only
        )
    prepared = Prepared(config, dataset, templates, profiles, people_profile(config), costs)
    check_budget_fits(prepared)
    return prepared


def check_budget_fits(prepared: Prepared) -> None:
    """Refuse a budget that cannot pay for one unit of work before anything is created (a run that
    could only end empty). Tokens and USD are checked against the cheapest possible request: the
    shortest prompt with its shortest responses, at its worst case.

    Raises:
        OrchestratorError: naming the budget field, what it allows and what one unit needs.
    """
    config, dataset = prepared.config, prepared.dataset
    b = config.budget
    from .planners import planner_for

    role, requests = planner_for(config).unit_calls(config, len(prepared.profiles))
    # max_calls counts paid completions: a judge without log-probabilities pays `samples` per request
    sampled = {n: p.samples for n, p in prepared.profiles.items() if not p.logprobs and p.samples > 1}
    calls = requests * max([1, *sampled.values()])
    if b.max_calls is not None and b.max_calls < calls:
        raise OrchestratorError(
            f"budget.max_calls = {b.max_calls} cannot pay for one {role} request set: it takes {calls} "
            f"completions ({len(prepared.profiles)} judge(s)"
            + (", both orders" if role == "pairwise" and requests > len(prepared.profiles) else "")
            + "".join(f"; {name} samples {k} verdicts per request" for name, k in sorted(sampled.items()))
            + "; max_calls counts paid completions)"
        )
    if b.max_tokens is None and b.max_usd is None:
        return
    template = prepared.templates[role]
    local = {n for n, p in prepared.profiles.items() if is_local(p, config.dispatch.api_base)}
    prices = judge_prices(prepared.profiles, local, max_usd=b.max_usd)

    def size(pid: str) -> tuple[int, list[str]]:
        texts = sorted((r.text for r in dataset.responses[pid].values()), key=len)[:2]
        return len(dataset.prompts[pid].text) + sum(len(t) for t in texts), texts

    pid = min(dataset.responses, key=lambda p: size(p)[0])
    texts = size(pid)[1]
    prompt = dataset.prompts[pid]
    shown = [texts[-1]] if template.kind == "absolute" else [texts[0], texts[-1]]
    tokens, usd = 0, 0.0
    per_judge = calls // len(prepared.profiles)
    for name, profile in prepared.profiles.items():
        messages = render_messages(
            template, prompt, shown, attribute=config.judging.attribute, prefill=profile.prefill, parameters=config.judging.parameters()
        )
        t, u = worst_case(messages, template, profile, prices[name])
        tokens += per_judge * t
        usd += per_judge * u
    if b.max_tokens is not None and b.max_tokens < tokens:
        raise OrchestratorError(
            f"budget.max_tokens = {b.max_tokens} cannot pay for one {role} request set: even the "
            f"shortest may need {tokens} tokens (worst case: every prompt byte a token, plus the "
            f"template's max_tokens)"
        )
    if b.max_usd is not None and b.max_usd < usd:
        raise OrchestratorError(
            f"budget.max_usd = {b.max_usd} cannot pay for one {role} request set: even the shortest "
            f"may cost ${usd:.6f} at the judges' prices (worst case)"
        )


def check_judges(
    profiles: dict[str, JudgeProfile], templates: dict[str, Template], *, api_base: str | None, need_keys: bool = True
) -> None:
    """Refuse combinations that would only produce failed (but counted) calls."""

    from ..judging.batch import check_batch_profile

    for name, profile in profiles.items():
        if profile.kind == "human":
            raise OrchestratorError(
                f'judge {name!r} is people (kind = "human"), who are not called: name it in judging.people, '
                "and the run asks them items to label between rounds (orchestrator label RUN)"
            )
        check_batch_profile(profile)
        for template in templates.values():
            if template.prefill and not profile.prefill and template.read == "first_token":
                raise OrchestratorError(
                    f"judge {name!r} does not continue an assistant prefix, which template {template.name!r} reads its "
                    f"answer after; use {template.name}-noprefill (or a judge with prefill = true)"
                )
        if need_keys and profile.api_key_env and not os.environ.get(profile.api_key_env) and not api_base:
            raise OrchestratorError(f"judge {name!r} needs its API key in the environment variable {profile.api_key_env}")


def check_candidate_keys(config: RunConfig) -> None:
    """Every candidate model that needs a key has one in the environment, checked before any judge
    or model is loaded (a missing key is one line, not a run of failed generations).

    Raises:
        OrchestratorError: naming the candidate and the variable.
    """
    import litellm

    from ..generation.settings import resolve_candidates

    for name, s in resolve_candidates(config.candidates, config.beside("judges")).items():
        if s.api_key_env:
            if not os.environ.get(s.api_key_env):
                raise OrchestratorError(f"candidates.{name}: its profile needs the API key in the environment variable {s.api_key_env}")
            continue
        if s.embedded or s.api_base or s.deployments:  # a local server or endpoints of its own
            continue
        missing = litellm.validate_environment(s.model).get("missing_keys") or []
        if missing:
            raise OrchestratorError(
                f"candidates.{name}: model {s.model!r} needs {', '.join(missing)} in the environment "
                "(or an api_base where it is served, or a judge profile with api_key_env)"
            )


def people_profile(config: RunConfig) -> JudgeProfile | None:
    """The profile ``judging.people`` names (kind ``human``); None when it names none.

    Raises:
        OrchestratorError: an unknown profile, or one of a model.
    """
    if config.judging.people is None:
        return None
    profile = get_profile(config.judging.people, config.beside("judges"))
    if profile.kind != "human":
        raise OrchestratorError(
            f'judging.people: profile {config.judging.people!r} is a model; people are a profile with kind = "human" (judges/human.toml)'
        )
    return profile


def dry_run(prepared: Prepared) -> dict:
    """What the run would ask at most, and its worst-case tokens and cost, without sending anything."""
    config, dataset = prepared.config, prepared.dataset
    from .groups import build_groups_for
    from .planners import planner_for

    groups = build_groups_for(dataset, config.data.scope)
    planner = planner_for(config)
    possible = planner.possible_requests(config, dataset, len(prepared.profiles))
    calls = possible if config.budget.max_calls is None else min(possible, config.budget.max_calls)
    # Mean worst case (and expected cost) of a request, from the first prompts' typical requests.
    rows: list[tuple[int, float]] = []
    typical: list[tuple[float, float]] = []
    template = prepared.templates[planner.role]
    for name, profile in prepared.profiles.items():
        price = judge_price(profile, is_local(profile, config.dispatch.api_base)) or (0.0, 0.0)
        for pid in list(dataset.responses)[:3]:
            prompt = dataset.prompts[pid]
            for text_a, text_b in planner.shown_texts(config, dataset, pid):
                shown = [text_b] if template.kind == "absolute" else [text_a, text_b]
                messages = render_messages(
                    template,
                    prompt,
                    shown,
                    attribute=config.judging.attribute,
                    prefill=profile.prefill,
                    parameters=config.judging.parameters(),
                )
                rows.append(worst_case(messages, template, profile, price))
                typical.append(typical_cost(messages, template, profile, price))
    tokens = sum(t for t, _ in rows) / len(rows)
    usd = sum(u for _, u in rows) / len(rows)
    expected_tokens = calls * sum(t for t, _ in typical) / len(typical)
    expected_usd = calls * sum(u for _, u in typical) / len(typical)
    est_tokens = int(calls * tokens)
    est_usd = calls * usd
    if config.budget.max_tokens is not None:
        est_tokens = min(est_tokens, config.budget.max_tokens)
    if config.budget.max_usd is not None:
        est_usd = min(est_usd, config.budget.max_usd)
    compare = (
        {
            "comparison": f"{config.compare.design} design, at most {config.compare.max_prompts} prompts (`compare --plan`: the power they give)"
        }
        if config.compare is not None
        else {}
    )
    named = [config.selection.planner] if config.selection.planner else []
    named += [p.provider for p in prepared.profiles.values() if p.provider]
    return {
        "run_file": str(config.run_path),
        # a config is code: say what it imports, and from where
        "imports": "; ".join(f"{spec.partition(':')[0]} from {module_origin(spec)}" for spec in dict.fromkeys(named))
        or "nothing outside the package",
        "prompts": len(dataset.prompts),
        "responses": dataset.n_responses,
        "groups": len(groups),
        "judges": list(prepared.profiles),
        "possible_requests": possible,
        "max_calls": calls,
        "max_tokens": est_tokens,
        "max_usd": round(est_usd, 6),
        "expected_tokens": int(min(expected_tokens, est_tokens)),
        "expected_usd": round(min(expected_usd, est_usd), 6),
        **compare,
        "worst_case_tokens_per_request": int(tokens),
        "expected_tokens_per_request": int(round(expected_tokens / max(calls, 1))),
        "note": (
            "max_*: upper bounds (every prompt byte a token, completions at max_tokens); expected_*: ~4 bytes per token, "
            "a one-token answer where logprobs read it, for max_calls calls (the stopping rule may end sooner: "
            "`run --pilot N` forecasts when)"
        ),
    }


def smoke(prepared: Prepared) -> list[dict]:
    """One real call per judge and template (:mod:`orchestrator.run.smoke`): what each judge answers
    to the run's templates, parsed, before any budget is spent."""
    from .smoke import smoke_calls, smoke_requests

    config = prepared.config
    requests = {
        name: smoke_requests(prepared.dataset, prepared.templates, config.judging.attribute, profile.prefill, config.judging.parameters())
        for name, profile in prepared.profiles.items()
    }
    with judges_for(prepared.profiles, api_base=config.dispatch.api_base) as (judges, _):
        return smoke_calls(judges, requests)


def smoke_candidates(prepared: Prepared) -> list[dict]:
    """One real generation per candidate model on the shortest prompt (at most two tries): ``candidate,
    model, status`` and ``answer`` (its first words) or ``error``. A bundled model is started by the
    run and is not asked here."""
    import asyncio

    from ..generation.generators import LiteLLMGenerator
    from ..generation.settings import answer_messages, candidate_router, resolve_candidates
    from ..judging.dispatch import RetryPolicy, retrier
    from ..records.answers import AnswerRequest, GeneratedAnswer

    config = prepared.config
    prompt = min(prepared.dataset.prompts.values(), key=lambda p: len(p.text))
    settings = resolve_candidates(config.candidates, config.beside("judges"))

    async def one(name: str) -> dict:
        s = settings[name]
        row = {"candidate": name, "model": s.model}
        if s.embedded:
            return {**row, "status": "bundled", "answer": f"(the bundled model {s.embedded} is started by the run)"}
        generator = LiteLLMGenerator(None, candidate_router(config.candidates[name].model, config.beside("judges")))
        request = AnswerRequest(prompt_id=prompt.id, candidate=name, messages=answer_messages(prompt, s), settings=s)
        tries = retrier(RetryPolicy(2, 0.5, 2.0), sleep=asyncio.sleep, retry=lambda a: a.retryable, retry_after=lambda a: a.retry_after_s)
        answer: GeneratedAnswer = await tries(generator.generate, request)
        if answer.status == "ok":
            return {**row, "status": "ok", "answer": " ".join(answer.text.split())[:80]}
        return {**row, "status": "failed", "error": f"{answer.error_type}: {' '.join((answer.error or '').split())[:500]}"}

    async def every() -> list[dict]:
        return await asyncio.gather(*(one(name) for name in settings))

    return run_closing_clients(every())
