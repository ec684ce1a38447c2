"""A few human labels in the simplex fit (issue #34 item 3): SummEval, the experts play the people.

For each aspect, the paper's three judges' 1–5 scores of 12 systems × 100 articles are fitted
(the default fit, as `fit simplex --human` runs it) with

- no labels;
- 5% of the answers (60) labelled at random (the expert mean score of the answer, rounded to a level);
- 5% in the labelling page's default order (`orchestrator label`, `--order random`: random items
  in rounds over the systems);
- 5% chosen by the judges' disagreement: the first items `orchestrator label --order disagreement`
  offers (the three judges' disagreement per minute of reading, in rounds over the systems;
  `orchestrator/people/choice.py`).

Reported: coverage of the expert ranks by the 95% rank intervals, their median width, Spearman with
the expert ranking, R-hat of the ranking, seconds — for the fit's own ranking and, with labels, for
people's ranking beside it (`fit simplex --human`: the fit's expected scores moved by the labels
through a candidate-specific judge bias, `orchestrator.offline.simplex.fit.people_beside`).

    python -m benchmarks.people.simplex_labels [--aspects coherence ...] [--share 0.05] [--seed 0]
"""

import importlib.util
import json
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import harness
from benchmarks.harness import ROOT, SHARED_DATA
from orchestrator.offline.judges.human_labels import AbsoluteLabel, HumanLabels
from orchestrator.offline.simplex.fit import load_absolute_judgments, people_beside, truth_scores
from orchestrator.people.choice import absolute_items, offer_order
from orchestrator.simplex import SimplexSettings, build_score_data, fit_or_fallback, label_grid
from orchestrator.simplex import baselines as B

SHARED = SHARED_DATA / "summeval"
PAPER_JUDGES = ["gpt-4-0314", "gpt-3.5-turbo-0301", "llama-2-70b-chat-hf"]


def _converter():
    spec = importlib.util.spec_from_file_location("make_likert", ROOT / "examples" / "make_summeval_likert.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.convert


def main() -> None:
    ap = harness.parser(__doc__, quick="the coherence aspect only")
    ap.add_argument("--aspects", nargs="+", default=["coherence", "consistency", "fluency", "relevance"])
    ap.add_argument("--share", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.quick:
        args.aspects = ["coherence"]
    convert = _converter()
    expert, answer_text = {}, {}
    for line in (SHARED / "responses.jsonl").read_text().splitlines():
        row = json.loads(line)
        expert[(row["prompt_id"], row["candidate"])] = row["human"]
        answer_text[(row["prompt_id"], row["candidate"])] = row["text"]
    prompt_text = {json.loads(line)["id"]: json.loads(line)["text"] for line in (SHARED / "prompts.jsonl").read_text().splitlines()}
    totals: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for aspect in args.aspects:
            log = Path(tmp) / f"{aspect}.jsonl"
            convert(SHARED, aspect, log)
            records, _ = load_absolute_judgments(log, log=True)
            data = build_score_data([r for r in records if r[0] in PAPER_JUDGES], levels=5)
            truth = truth_scores(SHARED / "responses.jsonl", aspect)
            true_rank = B.ranks(np.array([truth[c] for c in data.candidates]))
            full, _ = label_grid(data, {k: v[aspect] for k, v in expert.items()})
            K, Q = full.shape
            n = int(round(args.share * K * Q))
            rng = np.random.default_rng(args.seed)
            random_grid = np.zeros_like(full)
            pick = rng.choice(np.flatnonzero(full.ravel()), size=n, replace=False)
            random_grid.flat[pick] = full.flat[pick]
            # the product's choice (`orchestrator label`: the judges' disagreement per minute of reading)
            chars = lambda prompt, names: len(prompt_text.get(prompt, "")) + sum(len(answer_text.get((prompt, c), "")) for c in names)  # noqa: E731
            judged = [(p, c, probs) for j, c, p, probs in records if j in PAPER_JUDGES]
            question = {q: i for i, q in enumerate(data.questions)}
            cand = {c: k for k, c in enumerate(data.candidates)}

            def first_offered(order: str) -> np.ndarray:
                grid, taken = np.zeros_like(full), 0
                for item in offer_order(absolute_items(judged, 5, chars), order, args.seed):
                    k, q = cand[item.candidates[0]], question[item.prompt_id]
                    if full[k, q] > 0 and taken < n:
                        grid[k, q] = full[k, q]
                        taken += 1
                return grid

            print(f"\n{aspect} — paper's 3 judges, {n} labels ({args.share:.0%} of {K * Q} answers)")
            picks = (
                ("no labels", None),
                ("5% random", random_grid),
                ("5% page's default order", first_offered("random")),
                ("5% where judges disagree", first_offered("disagreement")),
            )
            for name, grid in picks:
                fit = fit_or_fallback(data, SimplexSettings(seed=args.seed), labels=grid)
                r = fit.ranks()
                lo, hi = r.lower.numpy(), r.upper.numpy()
                cover = float(np.mean((lo <= true_rank) & (true_rank <= hi)))
                width = float(np.median(hi - lo + 1))
                from scipy.stats import spearmanr

                rho = float(spearmanr(fit.expected_mean, [truth[c] for c in data.candidates]).statistic)
                totals.setdefault(name, []).append((cover, width, rho))
                print(
                    f"  {name:<28} coverage {cover:.3f}  median width {width:.1f}  Spearman {rho:.3f}  "
                    f"R-hat {fit.rhat['ranking']:.3f}  {fit.seconds:.0f} s" + ("  FALLBACK" if fit.fallback_from else ""),
                    flush=True,
                )
                if grid is None:
                    continue
                # people's ranking beside the fit: the labels are the experts' unrounded mean scores
                ks, qs = np.nonzero(grid)
                chosen = HumanLabels(
                    absolute=[
                        AbsoluteLabel(
                            prompt_id=data.questions[q],
                            candidate=data.candidates[k],
                            score=expert[(data.questions[q], data.candidates[k])][aspect],
                        )
                        for k, q in zip(ks, qs)
                    ]
                )
                people = people_beside(fit, chosen, data.questions, 0.95, {c: truth[c] for c in data.candidates})
                assert people is not None
                widths = [row["rank_high"] - row["rank_low"] + 1 for row in people["ranking"]]
                score = {row["candidate"]: row["score"] for row in people["ranking"]}
                rho_p = float(spearmanr([score[c] for c in data.candidates], [truth[c] for c in data.candidates]).statistic)
                totals.setdefault(name + ", people's", []).append((people["coverage_vs_truth"], float(np.median(widths)), rho_p))
                print(
                    f"  {name + ', people’s':<28} coverage {people['coverage_vs_truth']:.3f}  median width {np.median(widths):.1f}  "
                    f"Spearman {rho_p:.3f}  E[τ] {people['tau']:.3f}",
                    flush=True,
                )
    print(f"\nmean over {len(args.aspects)} aspect(s):")
    for name, rows in totals.items():
        arr = np.array(rows)
        print(f"  {name:<28} coverage {arr[:, 0].mean():.3f}  median width {arr[:, 1].mean():.2f}  Spearman {arr[:, 2].mean():.3f}")


if __name__ == "__main__":
    harness.run(main, __file__)
