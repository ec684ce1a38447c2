"""People's win rates beside RAEE (issue #34 item 3): PPI++ on a simulated panel whose judges share
a bias against one candidate.

Six candidates against one anchor on 400 prompts; people prefer candidate k with probability
σ(logit p_k + d_i) on prompt i (d_i ~ N(0, 1): prompts differ); three judges give soft outcomes
σ(logit p_k + d_i + b_k + e), e ~ N(0, 0.5), with b = −1.2 logits for one candidate (a bias all
judges share) and 0 for the others. People label a random share of each candidate's prompts
(a Bernoulli verdict). Reported over seeds: how often the 95% intervals cover the people's win rate
on the pool (mean of the per-prompt probabilities) — the judges' own interval of the pooled
outcome, and the PPI++ interval (`fit raee --human`) — and the PPI++ width beside the labels'
alone (Student's t on the same labels).

    python -m benchmarks.people.raee_people [--seeds 100] [--shares 0.05 0.1]
"""

import numpy as np
from scipy.stats import t as student

from benchmarks import harness
from orchestrator.offline.replay.simulate import simulate_shared_bias_panel
from orchestrator.raee.human import people_estimates

PEOPLE = [0.2, 0.35, 0.5, 0.6, 0.7, 0.8]
VICTIM = 4


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--seeds", type=harness.count, default=100)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.05, 0.1])
    args = parser.parse_args()
    print(
        "| labels | PPI++ covers (all) | PPI++ covers (biased one) | judges' interval covers (all / biased one) | median width PPI++ | labels alone | ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    for share in args.shares:
        cover, victim, judge_cover, judge_victim, width, alone = [], [], [], [], [], []
        for seed in range(args.seeds):
            data, listed, truth = simulate_shared_bias_panel(seed, share, people=tuple(PEOPLE), victim=VICTIM)
            labels = {(p, c): y for p, c, y in listed}
            people = people_estimates(data, lambda p, c, a: labels.get((p, c)), soft=True)
            for k, t in enumerate(truth):
                e = people[("REF", "pooled", f"c{k}")]
                cover.append(e.low <= t <= e.high)
                width.append(e.high - e.low)
                y = np.array([v for (p, c), v in labels.items() if c == f"c{k}"])
                alone.append(2 * student.ppf(0.975, y.size - 1) * y.std(ddof=1) / np.sqrt(y.size))
                f = data.win[data.candidate == f"c{k}"].reshape(3, -1).mean(0)
                judged = abs(f.mean() - t) <= 1.96 * f.std(ddof=1) / np.sqrt(f.size)
                judge_cover.append(judged)
                if k == VICTIM:
                    victim.append(cover[-1])
                    judge_victim.append(judged)
        print(
            f"| {share:.0%} ({int(share * 400)} per candidate) | {np.mean(cover):.3f} | {np.mean(victim):.3f} | "
            f"{np.mean(judge_cover):.3f} / {np.mean(judge_victim):.3f} | {np.median(width):.3f} | {np.median(alone):.3f} | "
            f"{np.median(width) / np.median(alone):.2f} |"
        )


if __name__ == "__main__":
    harness.run(main, __file__)
