"""The public Python API: what the README's Python section shows, on a real run."""

import json

import pytest

import orchestrator as orc
from judgekit import STOP_AT_BUDGET, quality_behaviour, write_config, write_dataset
from orchestrator.judging.testserver import FakeOpenAIServer


def test_public_names_are_the_cli_commands():
    assert {
        "start",
        "dry_run",
        "resume",
        "status",
        "ranking",
        "export",
        "replay",
        "fit_raee",
        "fit_simplex",
        "OrchestratorError",
        "RunFailed",
    } <= set(orc.__all__)
    for name in orc.__all__:
        assert callable(getattr(orc, name)) or name == "__version__", name


def test_start_rank_export_replay_through_the_api(tmp_path):
    prompts, responses = write_dataset(tmp_path / "d", prompts=2, candidates=5)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            tmp_path, server.url, name="api", prompts=prompts, responses=responses, max_calls=24, budget_extra=STOP_AT_BUDGET
        )
        estimate = orc.dry_run(config)
        assert estimate["max_calls"] == 24 and server.requests == []
        path, reason = orc.start(config)
    status = orc.status(path)
    assert reason.startswith("budget") and status.spent["calls"] == 24 and status.stop_kind == "budget"
    board = orc.ranking(path, level=0.9)  # the typed record `rank --json` prints
    assert board.level == 0.9 and len(board.groups) == 2
    assert json.loads(json.dumps(board.as_dict())) == board.model_dump(mode="json", exclude_unset=True)
    assert orc.resume(path) is None  # finished already
    out = tmp_path / "api.jsonl"
    assert orc.export(path, out=out) == 24 and len(out.read_text().splitlines()) == 24
    report = orc.replay(out, responses=responses, truth="coherence")
    ranked = {g.group: [r.candidate for r in g.ranking] for g in board.groups}
    assert report.to_json()["rankings"] == ranked  # the export reproduces the run's ranking
    assert json.loads(json.dumps(report.to_json()))["strategy"] == "lookahead"  # the default strategy
    try:
        orc.ranking(path, level=1.5)
    except orc.OrchestratorError as exc:
        assert "level" in str(exc)
    else:
        raise AssertionError("level 1.5 was accepted")


def test_the_fits_and_replay_take_their_settings_objects_checked_once_naming_the_field(tmp_path):
    """``replay`` and ``fit_simplex`` take one settings object each; a bad choice is one line naming
    the field (and its CLI option), raised where the object is made, before any work."""
    import orchestrator as orc

    with pytest.raises(orc.OrchestratorError, match=r"omega \(--omega\) must be ≥ 0"):
        orc.SimplexSettings(omega=-1.0)
    with pytest.raises(orc.OrchestratorError, match=r"likelihood \(--likelihood\)"):
        orc.SimplexSettings(likelihood="votes")  # type: ignore[arg-type]
    settings = orc.ReplaySettings(strategy="random", scope="global", control=("self",), families=("j=A", "m=A"))
    assert settings.families == (("j", "A"), ("m", "A"))  # written as on the command line, read once
    with pytest.raises(orc.OrchestratorError):
        orc.ReplaySettings(families=("no-equals-sign",))


def test_fit_raee_takes_its_settings_or_their_fields_never_both(tmp_path):
    """``fit_raee`` takes one :class:`RaeeSettings` (or its fields as keywords, the same record); the
    checks run where the record is made, in one line naming the field and its flag."""
    assert orc.RaeeSettings(control=["self"], families={"j": "A"}).families == (("j", "A"),)
    assert orc.RaeeSettings(control=("self",), families=("j=A", "m=B")).families == (("j", "A"), ("m", "B"))
    with pytest.raises(orc.OrchestratorError, match=r"level \(--level\) must be in \(0, 1\)"):
        orc.RaeeSettings(level=1.0)
    with pytest.raises(orc.OrchestratorError, match=r"judges must be a list of names, not the string 'gpt-4o'"):
        orc.RaeeSettings(judges="gpt-4o")  # type: ignore[arg-type]
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            json.dumps(
                {"kind": "reference", "judge": "j", "prompt_id": f"p{k}", "candidates": ["reference", c], "probs": {"A": 0.3, "B": 0.7}}
            )
            + "\n"
            for k in range(4)
            for c in ("m1", "m2")
        )
    )
    by_keyword = orc.fit_raee(log=log, soft=True)
    by_record = orc.fit_raee(log=log, settings=orc.RaeeSettings(soft=True))
    assert [(r.candidate, r.p_bar) for r in by_keyword.rows] == [(r.candidate, r.p_bar) for r in by_record.rows]
    # soft outcomes 0.7 on 4 prompts: the Jeffreys posterior mean (4 · 0.7 + ½) / (4 + 1)
    assert [round(r.p_bar, 9) for r in by_keyword.rows] == [0.66, 0.66]
    with pytest.raises(orc.OrchestratorError, match="not both"):
        orc.fit_raee(log=log, settings=orc.RaeeSettings(), soft=True)
    with pytest.raises(orc.OrchestratorError, match="unknown setting 'judge'"):
        orc.fit_raee(log=log, judge=["j"])


def test_the_front_of_the_api_is_small_and_docs_api_md_lists_exactly_it():
    """``orchestrator.api`` exports the verbs a user calls and the records they get back (at most
    30 names), each of them real; docs/api.md's table of exports names the same ones, in order."""
    import re
    from pathlib import Path

    import orchestrator.api as front

    assert len(front.__all__) <= 30 and len(set(front.__all__)) == len(front.__all__)
    for name in front.__all__:
        assert callable(getattr(front, name)), name  # a function, a record or the config loader
    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    table = text.split("<!-- api-exports -->")[1].split("<!-- /api-exports -->")[0]
    documented = re.findall(r"^\| `(\w+)` \|", table, flags=re.M)
    assert documented == list(front.__all__)
    # what left the front is still importable from its module
    from orchestrator.api.compare import junit_xml
    from orchestrator.api.lifecycle import summary
    from orchestrator.api.presentation import failure_advice, format_raee
    from orchestrator.api.settings import RaeeSettings, ReplaySettings, SimplexSettings

    assert all(callable(f) for f in (junit_xml, summary, failure_advice, format_raee, RaeeSettings, ReplaySettings, SimplexSettings))
    for gone in ("summary", "junit_xml", "format_raee", "ReplaySettings", "failure_advice"):
        assert not hasattr(front, gone), gone
