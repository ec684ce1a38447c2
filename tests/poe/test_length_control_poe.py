"""Length and style control in the PoE posterior: each judge's tastes β_jc fitted with
the scores in the Laplace step (arena-hard's style control), through a run, `rank` and `replay`."""

import json
import sqlite3

import numpy as np
import pytest
from pydantic import ValidationError
from scipy.stats import spearmanr

from judgekit import length_controlled_run, quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.offline.replay.simulate import simulate_length_comparisons
from orchestrator.poe import Observations, PoEConfig, fit_with_reliability
from orchestrator.poe.covariates import comparison_covariates, expand_controls, self_covariate, text_features
from orchestrator.records.config import RunConfig


def _length_loving_comparisons(seed: int):
    scores, comparisons = simulate_length_comparisons(12, 800, length_effect=3.0, seed=seed)
    return scores, Observations.from_lists(12, comparisons)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_judges_length_taste_is_recovered_and_the_controlled_ranking_is_closer_to_the_truth(seed):
    scores, observations = _length_loving_comparisons(seed)
    raw = fit_with_reliability(observations, PoEConfig())
    controlled = fit_with_reliability(observations, PoEConfig(controls=("length",)))
    beta, sd = float(controlled.judges["length"][0]), float(controlled.judges["length_sd"][0])
    assert beta == pytest.approx(3.0, rel=0.15)
    assert 0 < sd < 0.6
    assert "length" not in raw.judges
    assert spearmanr(controlled.mean.numpy(), scores).statistic > spearmanr(raw.mean.numpy(), scores).statistic
    assert spearmanr(controlled.mean.numpy(), scores).statistic > 0.95


def test_length_control_without_a_covariate_is_the_plain_model():
    scores, observations = _length_loving_comparisons(2)
    plain = Observations(observations.n, observations.first, observations.second, observations.prob)
    a = fit_with_reliability(plain, PoEConfig(controls=("length",)))
    b = fit_with_reliability(plain, PoEConfig())
    assert "length" not in a.judges and np.allclose(a.mean.numpy(), b.mean.numpy())


def test_length_control_is_refused_where_length_cannot_be_told_from_quality(tmp_path):
    base = {"name": "x", "data": {"prompts": "p.jsonl", "responses": "r.jsonl"}, "judging": {"judges": ["local-openai"]}}
    with pytest.raises(ValidationError, match='needs data.scope = "global"'):
        RunConfig.model_validate({**base, "model": {"control": ["length"]}})
    with pytest.raises(ValidationError):
        RunConfig.model_validate({**base, "model": {"control": ["style"]}})
    ok = RunConfig.model_validate({**base, "data": {**base["data"], "scope": "global"}, "model": {"control": ["length"]}})
    assert ok.model.control == ["length"]


def test_a_global_run_with_length_control_shows_each_judges_length_effect(tmp_path, capsys):
    path, rows = length_controlled_run(tmp_path, name="lc", max_calls=30)
    capsys.readouterr()
    assert run_cli(["rank", str(path), "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    (judge,) = group["judges"]
    # the test judge has no length taste: β is estimated near 0
    assert "length" in judge and abs(judge["length"]) < 3 * judge["length_sd"] + 0.5
    assert run_cli(["rank", str(path), "--details"]) == 0
    assert "length β" in capsys.readouterr().out
    from orchestrator.report import write_report

    html = write_report(path, tmp_path / "lc.html").read_text()  # type: ignore[union-attr]
    assert "<h3>Judge biases</h3>" in html and f"{judge['length']:+.3f} ± {judge['length_sd']:.3f}" in html
    # the judge's length taste beside people's: this judge follows the hidden quality, which is the
    # reference score, so on the same pairs it prefers the longer answer exactly as often as people do
    texts = {(r["prompt_id"], r["candidate"]): (len(r["text"]), r["human"]["coherence"]) for r in rows}
    db = sqlite3.connect(path)
    pairs = [(p, json.loads(c)) for p, c in db.execute("select prompt_id, candidates from judgments where status = 'ok'")]
    db.close()
    votes = [
        (texts[(p, a)][1] > texts[(p, b)][1]) == (texts[(p, a)][0] > texts[(p, b)][0])
        for p, (a, b) in pairs
        if texts[(p, a)][0] != texts[(p, b)][0]
    ]
    share = f"{sum(votes) / len(votes):.1%}"
    assert f"{share} (reference {share})" in html


def test_replay_with_length_control_reports_the_effect_and_refuses_per_prompt(tmp_path, capsys):
    log, responses = tmp_path / "log.jsonl", tmp_path / "responses.jsonl"
    rng = np.random.default_rng(5)
    quality = {f"m{c}": q for c, q in enumerate(rng.normal(0, 1, 6))}
    with log.open("w") as out, responses.open("w") as texts:
        for p in range(20):
            lengths = {c: int(np.exp(rng.normal(5, 0.5))) for c in quality}
            for c in quality:
                texts.write(json.dumps({"prompt_id": f"p{p}", "candidate": c, "text": "w" * lengths[c], "human": {"q": quality[c]}}) + "\n")
            for a, b in [("m0", "m1"), ("m2", "m3"), ("m4", "m5"), ("m1", "m2"), ("m3", "m4"), ("m5", "m0")]:
                length = (lengths[a] - lengths[b]) / (lengths[a] + lengths[b])
                pa = float(1 / (1 + np.exp(-(quality[a] - quality[b] + 2.5 * length))))
                out.write(
                    json.dumps(
                        {"kind": "pairwise", "judge": "j", "prompt_id": f"p{p}", "candidates": [a, b], "probs": {"A": pa, "B": 1 - pa}}
                    )
                    + "\n"
                )
    args = ["replay", str(log), "--responses", str(responses), "--truth", "q", "--strategy", "random", "--batch", "40"]
    assert run_cli([*args, "--scope", "global", "--control", "length", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    effect = report["control_effects"]["global"]["j"]
    assert effect["length"] == pytest.approx(2.5, rel=0.25) and effect["length_sd"] > 0
    assert run_cli([*args, "--control", "length"]) == 2
    assert "--control length needs --scope global" in capsys.readouterr().err
    # length control needs the texts, not human scores: --responses without --truth only ranks
    untruthful = ["replay", str(log), "--responses", str(responses), "--strategy", "random", "--batch", "40", "--scope", "global"]
    assert run_cli([*untruthful, "--control", "length", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["control_effects"]["global"]["j"]["length"] == pytest.approx(effect["length"], rel=1e-6)
    assert run_cli(["replay", str(log), "--truth", "q"]) == 2
    assert "--truth FIELD reads the human scores in --responses" in capsys.readouterr().err


def test_markdown_features_are_counted_and_differenced():
    text = "# Title\n\nSome **bold** and __more__.\n\n- one\n- two\n1. three\n  ## not a header? yes, indented 2\n"
    assert text_features(text) == {"length": float(len(text)), "headers": 2.0, "lists": 3.0, "bold": 2.0}
    plain = text_features("plain words")
    a, b = comparison_covariates(text_features(text), plain, ("lists", "bold"))
    assert a == pytest.approx(3 / 4) and b == pytest.approx(2 / 3)
    assert comparison_covariates(plain, plain, ("length", "headers")) == (0.0, 0.0)
    assert expand_controls(["style", "length", "style"]) == ("headers", "lists", "bold", "length")
    with pytest.raises(ValueError, match="unknown control 'tone'"):
        expand_controls(["tone"])


def test_a_taste_for_bold_is_told_apart_from_length_and_taken_out_of_the_ranking():
    names = expand_controls(["length", "style"])
    scores, comparisons = simulate_length_comparisons(10, 900, length_effect=0.0, bold_effect=2.0, controls=names, seed=11)
    observations = Observations.from_lists(10, comparisons)
    fitted = fit_with_reliability(observations, PoEConfig(controls=names))
    plain = fit_with_reliability(observations, PoEConfig())
    assert float(fitted.judges["bold"][0]) == pytest.approx(2.0, rel=0.2)
    assert abs(float(fitted.judges["length"][0])) < 3 * float(fitted.judges["length_sd"][0]) + 0.3
    assert spearmanr(fitted.mean.numpy(), scores).statistic > spearmanr(plain.mean.numpy(), scores).statistic


def test_a_judges_preference_for_its_own_family_is_recovered_beside_impartial_judges():
    rng = np.random.default_rng(8)
    n = 8
    scores = rng.normal(0, 1, n)
    judges = ("judge-x", "judge-y", "judge-n")
    families = {f"c{i}": "x" if i % 2 == 0 else "y" for i in range(n)} | {"judge-x": "x", "judge-y": "y", "judge-n": "z"}
    comparisons = []
    for _ in range(1200):
        i, j = (int(v) for v in rng.choice(n, 2, replace=False))
        for k, judge in enumerate(judges):
            z = self_covariate(judge, f"c{i}", f"c{j}", families)
            taste = 1.5 if judge == "judge-x" else 0.0
            p = 1 / (1 + np.exp(-(scores[i] - scores[j] + taste * z + rng.normal(0, 0.3))))
            comparisons.append((i, j, float(p), k, z))
    observations = Observations.from_lists(n, comparisons, n_judges=3)
    fitted = fit_with_reliability(observations, PoEConfig(controls=("self",), families=families))
    assert float(fitted.judges["self"][0]) == pytest.approx(1.5, rel=0.2)
    assert abs(float(fitted.judges["self"][1])) < 3 * float(fitted.judges["self_sd"][1]) + 0.2
    plain = fit_with_reliability(observations, PoEConfig())
    assert spearmanr(fitted.mean.numpy(), scores).statistic >= spearmanr(plain.mean.numpy(), scores).statistic


def test_self_preference_needs_a_judge_of_a_candidates_family_and_a_neutral_one():
    base = {"name": "x", "data": {"prompts": "p.jsonl", "responses": "r.jsonl"}}
    message = "needs, in model.families, a judge of a candidate's family and a judge of none"
    for judges, families in (
        (["a"], {"a": "x", "m1": "x"}),
        (["a", "b"], {"a": "x", "b": "y", "m1": "x", "m2": "y"}),  # both judges have candidates of their family
        (["a", "b"], {"a": "z", "b": "w", "m1": "x"}),  # nobody's own family is judged
    ):
        with pytest.raises(ValidationError, match=message):
            RunConfig.model_validate({**base, "judging": {"judges": judges}, "model": {"control": ["self"], "families": families}})
    ok = {**base, "judging": {"judges": ["a", "b"]}, "model": {"control": ["self"], "families": {"a": "x", "m1": "x", "m2": "y"}}}
    assert RunConfig.model_validate(ok).model.control == ["self"]  # any scope; b has no family: neutral


def test_a_panel_run_with_self_preference_control_shows_each_judges_effect(tmp_path, monkeypatch, capsys):
    from judgekit import write_judge

    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(write_judge(tmp_path / "judges", "other-openai")))
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=4, seed=5)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            tmp_path,
            server.url,
            name="selfpref",
            prompts=prompts,
            responses=responses,
            judges='["local-openai", "other-openai"]',
            max_calls=40,
        )
        families = 'control = ["self"]\nfamilies = { "local-openai" = "x", "M0" = "x", "M1" = "x", "M2" = "y" }\n'
        config.write_text(config.read_text().replace("[model]\n", "[model]\n" + families))
        path, _ = api.start(config)
    capsys.readouterr()
    assert run_cli(["rank", str(path), "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    judged = [g for g in groups if g["judged"]]
    assert judged and all({"self", "self_sd"} <= set(j) for g in judged for j in g["judges"])
    assert run_cli(["rank", str(path), "--details"]) == 0
    assert "self β" in capsys.readouterr().out
