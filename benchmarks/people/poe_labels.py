"""People's ranking beside a PoE replay (issue #34 item 3, PoE part; `replay --human`): SummEval,
the experts play the people.

The bundled GPT-3.5 pairwise coherence verdicts (12 systems × 100 articles), global scope, a budget
of 150 calls (reorder selection, permutation debiasing, batch 5: the validity suite's PoE row), then
the experts' mean coherence score of a share of the answers as people's labels — at random, or 5 per
system at random (stratified) — or as many pairwise verdicts (the expert preference between two
logged answers to one article), in the labelling page's orders (`orchestrator label --order random
| disagreement`, reading time taken as equal). Reported over seeds: coverage of the expert ranking by the 95% rank
intervals and their mean width, the judges' posterior beside people's (`orchestrator.poe.human`).

    python -m benchmarks.people.poe_labels [--seeds 20] [--share 0.05]
"""

import json

import numpy as np

from benchmarks import harness
from benchmarks.harness import ROOT
from orchestrator.offline.replay.log_groups import build_groups
from orchestrator.offline.replay.replay import replay_group
from orchestrator.people.choice import offer_order, pairwise_items
from orchestrator.poe import PoEConfig, rank_intervals
from orchestrator.poe.human import people_scores
from orchestrator.poe.uncertainty import rank_intervals_from_draws
from orchestrator.records.log import load_log, load_responses

GPT35 = ROOT / "examples" / "summeval-gpt35"


def ranks_of(scores: np.ndarray) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=int)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--seeds", type=harness.count, default=20)
    parser.add_argument("--share", type=float, default=0.05)
    args = parser.parse_args()
    records = [(line, r) for line, r in load_log(GPT35 / "coherence.log.jsonl") if r.kind == "pairwise"]
    (group,) = build_groups(records, load_responses(GPT35 / "responses.jsonl"), "coherence", "global")
    names = group.names
    expert = {}
    for line in (GPT35 / "responses.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["candidate"] in names:
            expert[(row["prompt_id"], names.index(row["candidate"]))] = row["human"]["coherence"]
    answers = sorted(expert)
    true_rank = ranks_of(np.asarray(group.truth, dtype=float))
    kinds = ["scores at random", "scores, 5 per system", "verdicts, the page's order (random)", "verdicts, the page's disagreement order"]
    rows: dict[str, list[tuple[float, float]]] = {"judges' posterior (no labels)": [], **{k: [] for k in kinds}}
    taus: dict[str, list[float]] = {k: [] for k in kinds}
    logged = [(p, names[i], names[j], pf) for (i, j), judged in group.pairwise.items() for p, pf in judged]
    n_labels = int(args.share * len(answers))
    for seed in range(args.seeds):
        done = replay_group(group, "reorder", PoEConfig(), scope="global", debias="permutation", batch=5, budget=150, seed=seed)
        judges = rank_intervals(done.final, level=0.95)
        lo, hi = judges.lower.numpy(), judges.upper.numpy()
        rows["judges' posterior (no labels)"].append((np.mean((lo <= true_rank) & (true_rank <= hi)), np.mean(hi - lo + 1)))
        rng = np.random.default_rng(seed)
        random_pick = [answers[k] for k in rng.choice(len(answers), size=n_labels, replace=False)]
        per = max(1, n_labels // len(names))
        stratified = [(p, c) for c in range(len(names)) for p in rng.choice([p for p, cc in answers if cc == c], size=per, replace=False)]
        labelled = {}
        for order in ("random", "disagreement"):
            items = offer_order(pairwise_items(logged, lambda p, n: 1000), order, seed)
            verdicts = []
            for item in items[:n_labels]:
                a, b = (names.index(c) for c in item.candidates)
                ea, eb = expert[(item.prompt_id, a)], expert[(item.prompt_id, b)]
                verdicts.append((a, b, 1.0 if ea > eb else 0.0 if ea < eb else 0.5))
            labelled[order] = verdicts
        picks = {
            "scores at random": (random_pick, None),
            "scores, 5 per system": (stratified, None),
            "verdicts, the page's order (random)": ([], labelled["random"]),
            "verdicts, the page's disagreement order": ([], labelled["disagreement"]),
        }
        for name, (pick, verdicts) in picks.items():
            pairs = None if verdicts is None else tuple(np.array(col) for col in zip(*verdicts))
            people = people_scores(
                done.final.mean.numpy(),
                done.final.cov.numpy(),
                np.array([c for _, c in pick], dtype=int),
                np.array([expert[a] for a in pick], dtype=float),
                pairs=pairs,
                seed=seed,
            )
            assert people is not None
            intervals = rank_intervals_from_draws(people.draws, level=0.95)
            lo, hi = intervals.lower.numpy(), intervals.upper.numpy()
            rows[name].append((np.mean((lo <= true_rank) & (true_rank <= hi)), np.mean(hi - lo + 1)))
            taus[name].append(people.tau)
    base = np.mean([w for _, w in rows["judges' posterior (no labels)"]])
    print(
        f"| 95% rank intervals ({args.seeds} seeds, {n_labels} labels = {args.share:.0%} of the answers) | coverage of the expert ranks | mean width | width ratio | E[τ] |"
    )
    print("|---|---|---|---|---|")
    for name, values in rows.items():
        cov, width = np.mean([c for c, _ in values]), np.mean([w for _, w in values])
        tau = f"{np.mean(taus[name]):.2f}" if name in taus else "-"
        print(f"| {name} | {cov:.3f} | {width:.2f} | {width / base:.2f} | {tau} |")


if __name__ == "__main__":
    harness.run(main, __file__)
