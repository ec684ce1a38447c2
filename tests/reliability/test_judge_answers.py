"""One set of checks for every judge's answer before it is stored (orchestrator/judging/answers.py):
what the request knows comes from the request, probabilities are probabilities, a method's
probabilities are possible, and what fails a check is stored as a failure that says why — from a
provider of one's own, litellm, a log, the cache or ``record``."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgekit import run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.answers import INVALID, check_answer
from orchestrator.judging.cache import judge_identity
from orchestrator.judging.profiles import JudgeProfile
from orchestrator.records.judgments import JudgeRequest, Judgment
from orchestrator.records.log import GRADES
from orchestrator.records.templates import get_template

PAIRWISE = get_template("poe-pairwise")
REFERENCE = get_template("raee-pairwise-summary")
ABSOLUTE = get_template("poe-absolute")


def _request(template=PAIRWISE, candidates=("M0", "M1")) -> JudgeRequest:
    shown = list(candidates[:1]) if template.kind == "absolute" else list(candidates)
    return JudgeRequest(key="k0", template=template, messages=[{"role": "user", "content": "x"}], prompt_id="p0", candidates=shown)


# --- the property: any answer is stored consistent, or refused with its reason ---------------------

_numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 0.5, 1.0, 1 / 3, 2 / 3, -0.0, 1e-300]), st.integers(-3, 3)
)
_options = st.sampled_from(["A", "B", "C", "1", "5", "10", "11", "a", "", *GRADES])


@st.composite
def _answers(draw):
    template = draw(st.sampled_from([PAIRWISE, REFERENCE, ABSOLUTE]))
    request = _request(template)
    positions = draw(st.integers(0, 2))
    probs = [draw(st.dictionaries(_options, _numbers, max_size=4)) for _ in range(positions)]
    if draw(st.booleans()):  # a well-formed vector half of the time, so valid answers are drawn too
        options = template.options
        weights = [draw(st.integers(0, 4)) for _ in options]
        total = sum(weights) or 1
        probs = [{o: w / total for o, w in zip(options, weights)} if sum(weights) else {options[0]: 1.0}]
    method = draw(st.sampled_from(["logprobs", "verdict", "samples", "log", "stated", None]))
    samples = draw(st.one_of(st.none(), st.integers(0, 5), st.just(10**9)))
    fields = dict(
        key=draw(st.sampled_from(["", "k0", "zzz"])),
        prompt_id=draw(st.sampled_from(["", "p0", "p1"])),
        candidates=draw(st.sampled_from([[], list(request.candidates), list(reversed(request.candidates)), ["X"]])),
        kind=draw(st.sampled_from(["", template.kind, "pairwise", "absolute", "multi"])),
        template=draw(st.sampled_from(["", template.name, "other"])),
        status=draw(st.sampled_from(["ok", "ok", "failed"])),
        probs=probs,
        method=method,
        samples=samples,
        completions=samples,
        prompt_tokens=draw(st.integers(-5, 20)),
        cost_usd=draw(st.sampled_from([0.0, 0.01, -1.0, math.inf, math.nan])),
    )
    return request, Judgment.model_construct(**fields)  # unvalidated, as a careless provider's record could be


@given(_answers())
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_answer_is_stored_consistent_or_refused_with_its_reason(drawn):
    request, judgment = drawn
    out = check_answer(request, judgment, judge="j")
    # what the request knows comes from the request, always
    assert (out.key, out.prompt_id, out.candidates, out.kind, out.template, out.judge) == (
        request.key,
        request.prompt_id,
        list(request.candidates),
        request.template.kind,
        request.template.name,
        "j",
    )
    assert 0 <= out.prompt_tokens and math.isfinite(out.cost_usd) and out.cost_usd >= 0
    if out.status == "ok":
        allowed = set(GRADES) if request.template.grades else set(request.template.options)
        assert len(out.probs) == 1 and set(out.probs[0]) <= allowed
        assert all(math.isfinite(v) and 0 <= v <= 1 + 1e-6 for v in out.probs[0].values())
        assert math.fsum(out.probs[0].values()) == pytest.approx(1.0, abs=1e-6)
        assert out.method in (None, "logprobs", "verdict", "samples", "log")
        if out.method == "verdict":
            assert sorted(v for v in out.probs[0].values() if v > 0) == [1.0]
        # an answer about another question is never kept
        assert judgment.key in ("", request.key) and judgment.prompt_id in ("", request.prompt_id)
        assert judgment.candidates in ([], list(request.candidates))
    else:
        assert out.error and out.probs == [] and not out.retryable or judgment.status == "failed"
        if judgment.status == "ok":
            assert out.error_type == INVALID and out.error.startswith("the judge's answer was refused: ")


@pytest.mark.parametrize(
    "change, said",
    [
        ({"key": "zzz"}, "answers request 'zzz'"),
        ({"prompt_id": "p9"}, "about prompt 'p9'"),
        ({"candidates": ["M1", "M0"]}, "(the reverse order)"),
        ({"kind": "absolute"}, "is a 'absolute' judgment"),
        ({"template": "other"}, "names template 'other'"),
        ({"probs": [{"A": math.nan, "B": 0.5}]}, "not a finite number"),
        ({"probs": [{"A": -0.2, "B": 1.2}]}, "not a probability"),
        ({"probs": [{"A": 0.3, "B": 0.3}]}, "sums to 0.6"),
        ({"probs": [{"A": 0.5, "Z": 0.5}]}, "not the template's options"),
        ({"probs": []}, "no option probabilities"),
        ({"probs": [{"A": 0.5, "B": 0.5}, {"A": 1.0}]}, "the template reads 1"),
        ({"method": "verdict", "probs": [{"A": 0.7, "B": 0.3}]}, "one option at 1"),
        ({"method": "samples", "samples": 3, "probs": [{"A": 0.5, "B": 0.5}]}, "steps of 1/3"),
        ({"method": "samples", "samples": 10**9, "probs": [{"A": 1.0, "B": 0.0}]}, "at most 1000"),
        ({"method": "stated"}, "not how a judge's answer is read"),
        ({"stated": 0.8}, "goes with one verdict"),
    ],
)
def test_each_way_an_answer_can_be_wrong_is_refused_with_its_reason(change, said):
    request = _request()
    good = request.answer({"A": 0.8, "B": 0.2})
    out = check_answer(request, good.model_copy(update=change), judge="mine")
    assert out.status == "failed" and out.error_type == INVALID and said in out.error, out.error
    assert out.probs == [] and out.retryable is False


def test_the_helper_answers_for_the_request_and_passes_every_check():
    request = _request(REFERENCE, ("anchor", "M3"))
    for answer in (
        request.answer({"A": 0.2, "B": 0.7, "C": 0.1}, prompt_tokens=12, completion_tokens=1),
        request.answer({"A": 0.0, "B": 1.0, "C": 0.0}, method="verdict"),
        request.answer({"A": 1 / 3, "B": 2 / 3, "C": 0.0}, method="samples", samples=3),
    ):
        checked = check_answer(request, answer, judge="mine")
        assert checked.status == "ok", checked.error
        assert (checked.key, checked.kind, checked.candidates) == ("k0", "reference", ["anchor", "M3"])
    failed = request.failure("the model is down", error_type="server", retryable=True)
    assert check_answer(request, failed).retryable and failed.error_type == "server"


def test_usage_and_cost_a_judge_reports_are_believed_within_bounds():
    request = _request()
    out = check_answer(request, request.answer({"A": 1.0, "B": 0.0}, prompt_tokens=-4, cost_usd=math.inf), judge="j")
    assert out.status == "ok" and out.prompt_tokens == 0 and out.cost_usd == 1000.0 and "clamped" in out.note


# --- through a run: a provider of one's own whose answers are wrong ---------------------------------

PROVIDERS = textwrap.dedent(
    '''
    import math

    from orchestrator.judging import Judgment


    def _ok(request, name, **change):
        fields = dict(key=request.key, judge=name, template=request.template.name, kind=request.template.kind,
                      prompt_id=request.prompt_id, candidates=list(request.candidates), status="ok",
                      probs=[{"A": 0.8, "B": 0.2}], method="logprobs")
        fields.update(change)
        return Judgment(**fields)


    class Wrong:
        change = {}

        def __init__(self, profile):
            self.name = profile.name

        async def judge(self, request):
            change = dict(self.change)
            if change.get("candidates") == "reversed":
                change["candidates"] = list(reversed(request.candidates))
            return _ok(request, self.name, **change)


    class Key(Wrong): change = {"key": "not-the-key"}
    class Prompt(Wrong): change = {"prompt_id": "elsewhere"}
    class Reversed(Wrong): change = {"candidates": "reversed"}
    class Kind(Wrong): change = {"kind": "absolute"}
    class NaN(Wrong): change = {"probs": [{"A": math.nan, "B": 0.5}]}
    class Negative(Wrong): change = {"probs": [{"A": -0.2, "B": 1.2}]}
    class Unnormalised(Wrong): change = {"probs": [{"A": 3.0, "B": 4.0}]}
    class Verdict(Wrong): change = {"method": "verdict", "probs": [{"A": 0.7, "B": 0.3}]}


    class ReturnsNone(Wrong):
        async def judge(self, request):
            return None


    class ReturnsDict(Wrong):
        async def judge(self, request):
            return {"A": 0.5, "B": 0.5}


    class Hangs(Wrong):
        async def judge(self, request):
            import asyncio

            await asyncio.sleep(3600)


    class CannotStart:
        def __init__(self, profile):
            raise RuntimeError("no API key for my model")

        async def judge(self, request):
            return None


    class Helper:
        """A provider written with the request's helper: nothing to get wrong."""

        def __init__(self, profile):
            self.name = profile.name

        async def judge(self, request):
            return request.answer({"A": 0.75, "B": 0.25}, prompt_tokens=5, completion_tokens=1)
    '''
)


@pytest.fixture
def providers(tmp_path, monkeypatch):
    module = f"wrong_judges_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{module}.py").write_text(PROVIDERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    judges = tmp_path / "judges"
    judges.mkdir()
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    yield module, judges
    sys.modules.pop(module, None)


def _provider_profile(folder, name, spec, model=None, timeout_s=None):
    extra = (f'model = "{model}"\n' if model else "") + (f"timeout_s = {timeout_s}\n" if timeout_s else "")
    (folder / f"{name}.toml").write_text(
        f'name = "{name}"\nprovider = "{spec}"\n{extra}logprobs = true\nprefill = true\nprice_input_per_mtok = 0\nprice_output_per_mtok = 0\n'
    )


@pytest.mark.parametrize(
    "cls, said",
    [
        ("Key", "answers request 'not-the-key'"),
        ("Prompt", "about prompt 'elsewhere'"),
        ("Reversed", "(the reverse order)"),
        ("Kind", "'absolute' judgment"),
        ("NaN", "not a finite number"),
        ("Negative", "not a probability"),
        ("Unnormalised", "not a probability"),
        ("Verdict", "one option at 1"),
    ],
)
def test_a_provider_whose_answers_are_wrong_stores_failures_that_say_why_and_resume_pays_nothing(tmp_path, providers, capsys, cls, said):
    module, judges = providers
    _provider_profile(judges, "wrong", f"{module}:{cls}")
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=4)
    config = write_config(tmp_path, None, name="wrong", prompts=prompts, responses=responses, judges='["wrong"]', max_calls=6)
    assert run_cli(["run", str(config), "--no-cache"]) == 2  # no judgment succeeded: one line, the file kept
    err = capsys.readouterr().err
    assert said in err and "FOREIGN KEY" not in err and "internal error" not in err, err
    path = tmp_path / "runs" / "wrong.sqlite"
    db = sqlite3.connect(path)
    rows = db.execute("select status, error_type, error, probs, key in (select key from requests) from judgments").fetchall()
    assert len(rows) == 6 and all(r[0] == "failed" and r[1] == INVALID and said in r[2] and r[4] for r in rows), rows
    assert db.execute("select count(*) from requests where status = 'pending'").fetchone()[0] == 0
    assert "nan" not in json.dumps([r[3] for r in rows]).lower()
    assert run_cli(["resume", str(path), "--no-cache"]) in (0, 2)
    assert sqlite3.connect(path).execute("select count(*) from judgments").fetchone()[0] == 6  # nothing asked again


@pytest.mark.parametrize(
    "cls, said",
    [("ReturnsNone", "returned NoneType"), ("ReturnsDict", "returned dict"), ("Hangs", "did not answer within timeout_s = 0.2 s")],
)
def test_a_provider_that_breaks_its_protocol_is_a_stored_failure_not_a_crash(tmp_path, providers, capsys, cls, said):
    module, judges = providers
    _provider_profile(judges, "broken", f"{module}:{cls}", timeout_s=0.2)
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=4)
    config = write_config(tmp_path, None, name="broken", prompts=prompts, responses=responses, judges='["broken"]', max_calls=4)
    config.write_text(config.read_text().replace("[dispatch]", "[dispatch]\nmax_attempts = 2"))
    assert run_cli(["run", str(config), "--dry-run"]) == 2  # the smoke call says it first, in one line
    err = capsys.readouterr().err
    assert said in err and "internal error" not in err and len(err.strip().splitlines()) == 1, err
    assert run_cli(["run", str(config), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert said in err and "internal error" not in err, err
    rows = sqlite3.connect(tmp_path / "runs" / "broken.sqlite").execute("select status, error from judgments").fetchall()
    assert len(rows) == 4 and all(r[0] == "failed" and said in r[1] for r in rows)


def test_a_provider_that_cannot_be_built_is_one_line_before_anything_is_written(tmp_path, providers, capsys):
    module, judges = providers
    _provider_profile(judges, "unbuilt", f"{module}:CannotStart")
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=4)
    config = write_config(tmp_path, None, name="unbuilt", prompts=prompts, responses=responses, judges='["unbuilt"]', max_calls=4)
    for args in (["--dry-run"], ["--no-cache"]):
        assert run_cli(["run", str(config), *args]) == 2
        err = capsys.readouterr().err
        assert "could not be built (RuntimeError: no API key for my model)" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs" / "unbuilt.sqlite").exists()


def test_a_provider_written_with_the_helper_runs_a_campaign(tmp_path, providers):
    module, judges = providers
    _provider_profile(judges, "helped", f"{module}:Helper")
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=4)
    config = write_config(tmp_path, None, name="helped", prompts=prompts, responses=responses, judges='["helped"]', max_calls=6)
    assert run_cli(["run", str(config), "--no-cache"]) == 0
    rows = (
        sqlite3.connect(tmp_path / "runs" / "helped.sqlite")
        .execute("select status, judge, p_first, prompt_tokens from judgments")
        .fetchall()
    )
    assert rows and all(r == ("ok", "helped", 0.75, 5) for r in rows)


def test_two_providers_without_a_model_are_two_judges_to_the_cache(tmp_path, providers):
    module, judges = providers
    first = JudgeProfile(name="one", provider=f"{module}:Helper", prefill=True)
    second = JudgeProfile(name="one", provider=f"{module}:Key", prefill=True)
    assert judge_identity(first, None) != judge_identity(second, None)
    litellm_judge = JudgeProfile(name="x", model="openai/x")
    assert "provider" not in judge_identity(litellm_judge, None)  # litellm judges' cached answers keep their keys
    # through runs sharing one cache file: the second provider is asked, never answered by the first's cache
    _provider_profile(judges, "one", f"{module}:Helper")
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=4)
    cache = tmp_path / "cache.sqlite"
    config = write_config(tmp_path, None, name="a", prompts=prompts, responses=responses, judges='["one"]', max_calls=6)
    assert run_cli(["run", str(config), "--cache", str(cache)]) == 0
    _provider_profile(judges, "one", f"{module}:Verdict")  # the same name, another provider
    config = write_config(tmp_path, None, name="b", prompts=prompts, responses=responses, judges='["one"]', max_calls=6)
    assert run_cli(["run", str(config), "--cache", str(cache)]) == 2
    rows = sqlite3.connect(tmp_path / "runs" / "b.sqlite").execute("select cached, status from judgments").fetchall()
    assert rows and all(r == (0, "failed") for r in rows)


def test_the_cache_keeps_no_answer_that_fails_the_checks(tmp_path, providers):
    module, judges = providers
    _provider_profile(judges, "bad", f"{module}:Unnormalised")
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=4)
    cache = tmp_path / "cache.sqlite"
    config = write_config(tmp_path, None, name="c", prompts=prompts, responses=responses, judges='["bad"]', max_calls=6)
    run_cli(["run", str(config), "--cache", str(cache)])
    assert api.cache_stats(cache)["entries"] == 0
