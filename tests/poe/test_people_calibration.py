"""People's win rates and rankings beside the judges': RAEE with PPI++ against a hand
computation and a simulated panel whose judges share a bias against one candidate (without labels every
interval misses people's win rate there, with labels on 5% of the items they cover it), and PoE's people's ranking."""

import json

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import t as student

from judgekit import run_cli
from orchestrator.offline.replay.simulate import simulate_shared_bias_panel
from orchestrator.raee.human import people_estimates, ppi_mean

PEOPLE = [0.2, 0.35, 0.5, 0.6, 0.7, 0.8]  # P(people prefer candidate k to the anchor) on an average prompt
VICTIM = 4  # every judge marks this one down by 1.2 logits


def test_ppi_mean_matches_a_hand_computation():
    f = np.array([0.9, 0.2, 0.6, 0.4, 0.7, 0.3])
    y = np.array([1.0, 0.0, 1.0, np.nan, np.nan, np.nan])
    e = ppi_mean(f, y)
    # by hand: n = 3, N_u = 3; cov(y, f) over the labelled = 0.1833; var(f) over all six = 0.0697
    # λ = 0.1833 / ((1 + 3/3) · 0.0697) = 1.32, clipped to 1; θ = mean(y − f) + mean(f_u) = 0.1 + 0.4667
    assert e is not None and e.weight == 1.0 and e.labelled == 3 and e.unlabelled == 3
    assert e.estimate == pytest.approx(0.1 + 1.4 / 3)
    assert e.se == pytest.approx(np.sqrt(np.var([0.1, -0.2, 0.4], ddof=1) / 3 + np.var([0.4, 0.7, 0.3], ddof=1) / 3))
    assert ppi_mean(f, np.full(6, np.nan)) is None  # no labels: nothing to say
    only_labels = ppi_mean(np.full(4, 0.5), np.array([1.0, 1.0, np.nan, np.nan]))  # a judge that says nothing
    assert only_labels is not None and only_labels.weight == 0.0 and only_labels.low < 0.8  # 2 of 2 is not certainty


def _panel(seed: int, prompts: int = 400, share: float = 0.05):
    return simulate_shared_bias_panel(seed, share, prompts=prompts, people=tuple(PEOPLE), victim=VICTIM)


def test_labels_on_five_percent_cover_what_the_judges_share_a_bias_against():
    covered, victim_raw, victim_people, widths, classical = [], [], [], [], []
    for seed in range(20):
        data, labels, truth = _panel(seed)
        verdict = {(p, c): y for p, c, y in labels}
        people = people_estimates(data, lambda p, c, a: verdict.get((p, c)), soft=True)
        judge_only = people_estimates(data, lambda p, c, a: None, soft=True)
        assert judge_only == {}  # without labels: no people's column at all
        for k, t in enumerate(truth):
            e = people[("REF", "pooled", f"c{k}")]
            covered.append(e.low <= t <= e.high)
            widths.append(e.high - e.low)
            y = np.array([v for p, c, v in labels if c == f"c{k}"])
            classical.append(2 * student.ppf(0.975, y.size - 1) * y.std(ddof=1) / np.sqrt(y.size))  # the labels alone
        # the judges' own 95% interval of the victim (pooled mean ± 1.96 · its sd over prompts / √N)
        f = data.win[data.candidate == f"c{VICTIM}"].reshape(3, -1).mean(0)
        victim_raw.append(abs(f.mean() - truth[VICTIM]) <= 1.96 * f.std(ddof=1) / np.sqrt(f.size))
        victim_people.append(covered[-len(truth) + VICTIM])
    assert sum(victim_raw) == 0  # the shared bias: no judge, nor their mean, covers people's win rate
    assert np.mean(victim_people) >= 0.85 and np.mean(covered) >= 0.9  # with 20 labels a candidate
    assert np.median(widths) < np.median(classical)  # the judges' verdicts on the other 95% narrow it


def test_fit_raee_human_through_the_cli(tmp_path, capsys):
    data, labels, truth = _panel(3, prompts=120, share=0.25)
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            json.dumps({"kind": "reference", "judge": j, "prompt_id": p, "candidates": [a, c], "probs": {"A": float(lo), "B": float(w)}})
            + "\n"
            for a, j, c, p, _, w, _, lo in zip(
                data.anchor, data.judge, data.candidate, data.prompt, data.repeat, data.win, data.tie, data.loss
            )
        )
    )
    human = tmp_path / "people.jsonl"
    human.write_text(
        "".join(
            json.dumps({"prompt_id": p, "first": c, "second": "REF", "winner": c if y == 1 else "REF", "annotator": "ana"}) + "\n"
            for p, c, y in labels
        )
    )
    assert run_cli(["fit", "raee", "--log", str(log), "--soft", "--json", "--human", str(human)]) == 0
    report = json.loads(capsys.readouterr().out)
    pooled = {r["candidate"]: r for r in report["rows"] if r["judge"] == "judge0"}
    assert report["human_labels"] == len(labels) and all(pooled[f"c{k}"]["people_labels"] == 30 for k in range(6))
    victim = pooled[f"c{VICTIM}"]
    assert victim["people"] > victim["p_hat"] + 0.1  # people like it more than the judges say
    assert run_cli(["fit", "raee", "--log", str(log), "--soft", "--human", str(human)]) == 0
    assert "people's win rate (PPI++" in capsys.readouterr().out
    assert run_cli(["fit", "raee", "--log", str(log), "--soft", "--json"]) == 0
    assert all(r["people"] is None for r in json.loads(capsys.readouterr().out)["rows"])  # without labels: unchanged


def test_replay_human_moves_what_the_judge_is_biased_against(tmp_path, capsys):
    """PoE (`replay --human`): a judge that marks the best of six candidates down by 2.5 logits ranks
    it 4th with a tight interval; five people's scores per candidate put it back in the interval of
    rank 1, and without labels the output is unchanged."""
    rng = np.random.default_rng(0)
    quality = np.array([0.0, 0.4, 0.8, 1.2, 1.6, 2.0])
    seen = quality - np.array([0, 0, 0, 0, 0, 2.5])  # what the judge sees: c5 marked down
    lines = []
    for p in range(20):
        for a in range(6):
            for b in range(6):
                if a != b:
                    won = float(rng.random() < expit(seen[a] - seen[b]))
                    lines.append(
                        {
                            "kind": "pairwise",
                            "judge": "j",
                            "prompt_id": f"p{p}",
                            "candidates": [f"c{a}", f"c{b}"],
                            "probs": {"A": won, "B": 1 - won},
                        }
                    )
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    people = tmp_path / "people.jsonl"
    people.write_text(
        "".join(
            json.dumps(
                {"prompt_id": f"p{p}", "candidate": f"c{k}", "score": float(np.clip(np.round(3 + quality[k] + rng.normal(0, 0.5)), 1, 7))}
            )
            + "\n"
            for k in range(6)
            for p in range(5)
        )
    )
    base = ["replay", str(log), "--scope", "global", "--strategy", "random", "--batch", "100", "--json"]
    assert run_cli(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "people" not in plain and plain["rankings"]["global"].index("c5") >= 2  # the judge's view
    assert run_cli([*base, "--human", str(people)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in report.items() if k != "people"} == plain  # the judges' part is unchanged
    ranking = {r["candidate"]: r for r in report["people"]["global"]["ranking"]}
    assert ranking["c5"]["rank_low"] == 1 and report["people"]["global"]["labels"] == 30
    assert ranking["c0"]["rank_high"] == 6  # the worst stays the worst
    # people's pairwise verdicts instead: c5 against each of the others on 5 prompts (25 verdicts)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps(
                {
                    "prompt_id": f"p{p}",
                    "first": "c5",
                    "second": f"c{k}",
                    "winner": "c5" if rng.random() < expit(quality[5] - quality[k]) else f"c{k}",
                }
            )
            + "\n"
            for k in range(5)
            for p in range(5)
        )
    )
    assert run_cli([*base, "--human", str(pairs)]) == 0
    by_pairs = {r["candidate"]: r for r in json.loads(capsys.readouterr().out)["people"]["global"]["ranking"]}
    assert by_pairs["c5"]["rank_low"] == 1
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps({"prompt_id": "p0", "first": "x", "second": "y", "winner": "x"}) + "\n")
    assert run_cli([*base, "--human", str(elsewhere)]) == 2
    assert "no label speaks to a replayed group's candidates" in capsys.readouterr().err


def test_people_who_order_the_candidates_against_the_judges_still_move_the_ranking():
    """The scores' link α + β·h was once re-fitted against the current ``h``, which starts at the judges'
    mean: when the judges ordered the candidates against people, β came out ≤ 0, was clipped to ~0, and
    the labels were ignored (people's ranking = the judges'). On SummEval's GPT-3.5 log that is most
    seeds. The link now maximises the labels' marginal likelihood, so the labels win."""
    from scipy.stats import spearmanr

    from orchestrator.poe.human import people_scores

    rng = np.random.default_rng(0)
    truth = np.linspace(-1.5, 1.5, 8)  # people's order
    judges_mean, judges_cov = -truth, 0.3**2 * np.eye(8)  # the judges, sure of the reverse order
    candidate = np.repeat(np.arange(8), 5)
    score = 3 + 0.8 * truth[candidate] + rng.normal(0, 0.5, candidate.size)  # 5 people's scores each, 1–5 scale
    people = people_scores(judges_mean, judges_cov, candidate, score)
    assert people is not None
    assert spearmanr(people.mean, truth)[0] > 0.9
    assert people.tau >= 1.5  # the labels say the judges are far off


def test_scores_near_the_largest_float_give_a_ranking_not_a_crash():
    """Hostile labels (finite, but ±1e308) once overflowed the link's fit into NaN weights (exit 1)."""
    from orchestrator.poe.human import people_scores

    people = people_scores(np.zeros(3), np.eye(3), np.array([0, 1, 2, 0]), np.array([1e308, -1e308, 1e300, 5.0]))
    assert people is not None and np.isfinite(people.draws).all()


def test_a_candidate_every_judge_misplaces_is_found_by_five_labels_each():
    """Judges confident about twelve candidates but all marking one down by two spreads (a shared
    bias): their intervals miss it; people's ranking from five scores per candidate covers its true
    rank, because one candidate misplaced far beyond τ is a hypothesis of its own (with its own link)
    rather than something a common τ must stretch to explain."""
    from scipy.stats import rankdata

    from orchestrator.poe.human import people_scores, spread_grid
    from orchestrator.poe.uncertainty import rank_intervals_from_draws

    truth, victim = np.linspace(-1.5, 1.5, 12), 5
    true_rank = rankdata(-truth, method="min")
    judges_miss, covered, covered_plain, everyone = [], [], [], []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        mean = truth + rng.normal(0, 0.1, 12)
        mean[victim] -= 2.0
        cov = 0.15**2 * np.eye(12)
        judges = rank_intervals_from_draws(rng.multivariate_normal(mean, cov, 4000))
        judges_miss.append(not judges.lower[victim] <= true_rank[victim] <= judges.upper[victim])
        candidate = np.repeat(np.arange(12), 5)
        score = np.clip(np.round(3 + truth[candidate] + rng.normal(0, 0.7, candidate.size)), 1, 5)
        for outliers, out in ((True, covered), (False, covered_plain)):
            people = people_scores(mean, cov, candidate, score, tau_grid=spread_grid(mean, cov), outliers=outliers)
            assert people is not None
            ranks = rank_intervals_from_draws(people.draws)
            out.append(bool(ranks.lower[victim] <= true_rank[victim] <= ranks.upper[victim]))
            if outliers:
                everyone.append(np.mean((ranks.lower.numpy() <= true_rank) & (true_rank <= ranks.upper.numpy())))
    assert all(judges_miss)
    assert np.mean(covered) >= 0.8 and np.mean(everyone) >= 0.95
    assert np.mean(covered) > np.mean(covered_plain)
