"""The judgment cache shared by runs: a second run of the same config pays for
nothing and ranks the same; the cache never answers for another judge, other parameters or
another template; repeats keep their own samples; imports from runs and logs; the CLI."""

import json
import random
import sqlite3

import pytest

from judgekit import likert_behaviour, quality_behaviour, run_cli, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.cache import cache_key, judge_identity
from orchestrator.judging.client import JudgeProfile
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry
from orchestrator.store.cache import JudgmentCache


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "data", prompts=3, candidates=5)


@pytest.fixture
def server():
    with FakeOpenAIServer(quality_behaviour) as s:
        yield s


def _ranking(path):
    return {
        g["group"]: [(r["candidate"], round(r["score"], 9), r["rank_low"], r["rank_high"]) for r in g["ranking"]]
        for g in api.ranking(path).as_dict()["groups"]
    }


def test_the_same_config_under_a_second_name_sends_nothing_and_ranks_identically(tmp_path, server, data):
    cache = tmp_path / "cache.sqlite"
    first, _ = api.start(write_config(tmp_path, server.url, name="first", prompts=data[0], responses=data[1], max_calls=24), cache=cache)
    sent = len(server.requests)
    assert sent == 24
    second, reason = api.start(
        write_config(tmp_path, server.url, name="second", prompts=data[0], responses=data[1], max_calls=24), cache=cache
    )
    assert len(server.requests) == sent  # not one request reached the judge
    assert reason.startswith("budget: max_calls")
    assert _ranking(first) == _ranking(second)
    db = sqlite3.connect(second)
    assert db.execute("select count(*), sum(cached), sum(cost_usd), sum(prompt_tokens + completion_tokens) from judgments").fetchone() == (
        24,
        24,
        0.0,
        0,
    )
    note = db.execute("select note from judgments limit 1").fetchone()[0]
    assert note.startswith("from the judgment cache (paid")
    # the first run's judgments are not marked: it paid for them
    assert sqlite3.connect(first).execute("select sum(cached) from judgments").fetchone()[0] == 0
    status = api.status(second).as_dict()
    assert status["spent"]["cached"] == 24 and status["spent"]["tokens"] == 0
    exported = tmp_path / "second.jsonl"
    api.export(second, out=exported, fmt="jsonl")
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert all(line["cached"] is True and line["cost_usd"] == 0.0 for line in lines)
    with JudgmentCache(cache) as opened:
        stats = opened.stats()
    assert stats["entries"] == 24 and stats["hits"] == 24
    from orchestrator.report import collect, summary_text

    assert "24 answered from the judgment cache at no cost" in summary_text(collect(second))


def test_no_cache_asks_again_and_the_cache_never_crosses_judges_parameters_or_templates(tmp_path, server, data, monkeypatch):
    cache = tmp_path / "cache.sqlite"
    monkeypatch.setenv("ORCHESTRATOR_JUDGMENT_CACHE", str(cache))  # the CLI's default cache
    judges = write_judge(tmp_path / "judges", "local-openai")
    write_judge(judges, "other-openai")  # another model on the same server
    write_judge(judges, "warm-openai", model="openai/local")  # same model, other parameters:
    (judges / "warm-openai.toml").write_text((judges / "warm-openai.toml").read_text() + "[params]\ntemperature = 0.7\n")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))

    def sent(name, judge="local-openai", template=None, flags=()):
        config = write_config(tmp_path, server.url, name=name, judges=f'["{judge}"]', prompts=data[0], responses=data[1], max_calls=12)
        if template is not None:
            config.write_text(config.read_text().replace("[judging]\n", f'[judging]\npairwise_template = "{template}"\n'))
        before = len(server.requests)
        assert run_cli(["run", str(config), "--no-report", *flags]) == 0
        return len(server.requests) - before

    assert sent("a") == 12
    assert sent("b") == 0
    assert sent("c", flags=["--no-cache"]) == 12  # neither read nor filled
    assert sent("d", flags=["--cache", str(tmp_path / "elsewhere.sqlite")]) == 12
    assert sent("other-model", judge="other-openai") == 12
    assert sent("other-params", judge="warm-openai") == 12
    assert sent("other-template", template="poe-pairwise-noprefill") == 12
    assert sent("other-template-again", template="poe-pairwise-noprefill") == 0
    with JudgmentCache(cache) as opened:
        assert opened.stats()["entries"] == 48


def test_cache_keys_separate_judges_parameters_templates_messages_and_repeats():
    base = JudgeProfile(name="j", model="openai/m", api_base="http://127.0.0.1:1/v1")
    identity = judge_identity(base, None)
    messages = [{"role": "user", "content": "Which is better?"}]
    key = cache_key(identity, "digest-1", messages, 0)
    assert key == cache_key(judge_identity(base.model_copy(update={"name": "renamed", "timeout_s": 5.0}), None), "digest-1", messages, 0)
    others = [
        cache_key(judge_identity(base.model_copy(update={"model": "openai/n"}), None), "digest-1", messages, 0),
        cache_key(judge_identity(base.model_copy(update={"params": {"temperature": 0.7}}), None), "digest-1", messages, 0),
        cache_key(judge_identity(base.model_copy(update={"top_logprobs": 5}), None), "digest-1", messages, 0),
        cache_key(judge_identity(base, "http://127.0.0.1:2/v1"), "digest-1", messages, 0),
        cache_key(identity, "digest-2", messages, 0),
        cache_key(identity, "digest-1", [{"role": "user", "content": "Which is worse?"}], 0),
        cache_key(identity, "digest-1", messages, 1),
    ]
    assert len({key, *others}) == 1 + len(others)
    embedded = JudgeProfile(name="e", model="openai/qwen", embedded="qwen1.5b")
    assert judge_identity(embedded, None)["address"] == "embedded:qwen1.5b"  # whatever port its server has


def _sampling_behaviour(body: dict):
    """A temperature-0.7 judge: each call draws its level at random."""
    level = str(random.randint(1, 5))
    alts = [(level, 0.9)] + [(str(k), 0.1 / 4) for k in range(1, 6) if str(k) != level]
    return 200, {}, completion(level, [logprob_entry(level, alts)])


def test_repeats_of_a_sampling_judge_keep_their_own_samples(tmp_path, data, monkeypatch):
    cache = tmp_path / "cache.sqlite"
    judges = write_judge(tmp_path / "judges", "local-openai")
    (judges / "local-openai.toml").write_text((judges / "local-openai.toml").read_text() + "[params]\ntemperature = 0.7\n")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    with FakeOpenAIServer(_sampling_behaviour) as server:

        def run(name):
            config = write_config(
                tmp_path, server.url, name=name, prompts=data[0], responses=data[1], max_calls=None, absolute="repeats = 3", concurrency=2
            )
            path, _ = api.start(config, cache=cache)
            rows = sqlite3.connect(path).execute(
                "select prompt_id, candidates, repeat, probs from judgments order by prompt_id, candidates, repeat"
            )
            return {(p, c, r): probs for p, c, r, probs in rows}

        first = run("first")
        assert len(server.requests) == 45  # 15 answers × 3 repeats, each its own call
        second = run("second")
        assert len(server.requests) == 45
    assert first == second  # every repeat answered with its own sample
    distinct = {tuple(first[(p, c, r)] for r in range(3)) for (p, c, _) in first}
    assert any(len(set(samples)) > 1 for samples in distinct)  # the repeats are not one sample thrice


def test_import_from_a_run_file_and_from_a_log(tmp_path, data, monkeypatch):
    judges = write_judge(tmp_path / "judges", "local-openai")
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(judges))
    with FakeOpenAIServer(likert_behaviour()) as server:
        old, _ = api.start(
            write_config(tmp_path, server.url, name="old", prompts=data[0], responses=data[1], max_calls=None, absolute=""), cache=False
        )
        sent = len(server.requests)
        cache = tmp_path / "cache.sqlite"
        assert run_cli(["cache", "import", str(old), "--cache", str(cache)]) == 0
        with JudgmentCache(cache) as opened:
            assert opened.stats()["entries"] == 15
        api.start(
            write_config(tmp_path, server.url, name="new", prompts=data[0], responses=data[1], max_calls=None, absolute=""), cache=cache
        )
        assert len(server.requests) == sent  # answered from the imported run
        # an export of the old run, rendered again from the data files, keys the same requests (the
        # judge's address is part of its identity: the runs name the test server in dispatch.api_base)
        log = tmp_path / "old.jsonl"
        api.export(old, out=log, fmt="jsonl")
        from_log = tmp_path / "from-log.sqlite"
        code = run_cli(
            [
                "cache",
                "import",
                str(log),
                "--cache",
                str(from_log),
                "--judge",
                "local-openai",
                "--prompts",
                str(data[0]),
                "--responses",
                str(data[1]),
                "--api-base",
                server.url,
            ]
        )
        assert code == 0
        api.start(
            write_config(tmp_path, server.url, name="from-log", prompts=data[0], responses=data[1], max_calls=None, absolute=""),
            cache=from_log,
        )
        assert len(server.requests) == sent


def test_cache_commands_and_bad_input(tmp_path, data, capsys):
    cache = tmp_path / "cache.sqlite"
    assert run_cli(["cache", "stats", "--cache", str(cache)]) == 2
    assert "no judgment cache yet" in capsys.readouterr().err
    not_a_cache = tmp_path / "other.sqlite"
    sqlite3.connect(not_a_cache).execute("create table t (x)").connection.commit()
    with pytest.raises(OrchestratorError, match="not a judgment cache"):
        JudgmentCache(not_a_cache)
    assert sqlite3.connect(not_a_cache).execute("select count(*) from t").fetchone() == (0,)  # untouched
    with JudgmentCache(cache) as opened:
        for i in range(3):
            opened.put(
                f"k{i}",
                model="openai/m" if i else "openai/n",
                template_digest="d",
                repeat=0,
                judgment={"cost_usd": 0.5, "prompt_tokens": 10},
            )
        assert not opened.put("k0", model="openai/x", template_digest="d", repeat=0, judgment={})  # the first answer stays
    assert run_cli(["cache", "stats", "--cache", str(cache), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == 3 and stats["paid_usd"] == 1.5
    assert run_cli(["cache", "prune", "--cache", str(cache)]) == 2
    assert run_cli(["cache", "prune", "--cache", str(cache), "--older-than", "nan"]) == 2
    assert run_cli(["cache", "prune", "--cache", str(cache), "--model", "openai/m"]) == 0
    assert "removed 2 entries" in capsys.readouterr().err
    assert run_cli(["cache", "import", str(tmp_path / "missing.jsonl"), "--cache", str(cache)]) == 2
    assert run_cli(["cache", "import", str(data[1]), "--cache", str(cache)]) == 2
    assert "needs --judge" in capsys.readouterr().err
    assert run_cli(["run", str(tmp_path / "x.toml"), "--cache", str(cache), "--no-cache"]) == 2
