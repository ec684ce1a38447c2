"""Draw docs/simplex-prior.png: the weight-propagation graph for M = 4 and what β_max does to the prior.

python docs/simplex_prior_figure.py
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from orchestrator.simplex.prior import propagation_table  # noqa: E402
from orchestrator.simplex.simulate import sample_confusion  # noqa: E402


def main() -> None:
    levels = 4
    fig = plt.figure(figsize=(13, 4.4))
    ax = fig.add_axes([0.02, 0.08, 0.36, 0.84])
    for e in propagation_table(levels):
        (m, s), (m2, t) = e["from"], e["to"]
        boosted = e["concentration"] == "1 + ρβ_max"
        ax.annotate(
            "",
            xy=(m2, -t),
            xytext=(m, -s),
            arrowprops=dict(arrowstyle="->", lw=2.2 if boosted else 0.7, color="tab:red" if boosted else "grey", shrinkA=9, shrinkB=9),
        )
    for m in range(1, levels + 1):
        for s in range(1, levels + 1):
            ax.scatter(m, -s, s=380, color="white", edgecolor="navy", zorder=3)
            ax.annotate(f"θ{m}{s}", (m, -s), ha="center", va="center", fontsize=7, zorder=4)
    ax.set_xticks(range(1, levels + 1), [f"true {m}" for m in range(1, levels + 1)])
    ax.set_yticks([-s for s in range(1, levels + 1)], [f"assigned {s}" for s in range(1, levels + 1)])
    ax.set_xlim(0.5, levels + 0.5)
    ax.set_ylim(-levels - 0.5, -0.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(
        "weight propagation, M = 4: mass moves only up (or stays);\nred = one-step-up edge, Dirichlet concentration 1 + ρβ_max (others 1)",
        fontsize=9,
    )
    rng = np.random.default_rng(0)
    for i, beta in enumerate((0.0, 5.0, 20.0)):
        mean = sample_confusion(4000, 5, beta, rng).mean(0)
        a = fig.add_axes([0.43 + i * 0.19, 0.12, 0.16, 0.72])
        a.imshow(mean, cmap="Blues", vmin=0, vmax=1)
        for m in range(5):
            for s in range(5):
                a.annotate(
                    f"{mean[m, s]:.2f}", (s, m), ha="center", va="center", fontsize=6, color="white" if mean[m, s] > 0.5 else "black"
                )
        a.set_xticks(range(5), range(1, 6))
        a.set_yticks(range(5), range(1, 6))
        a.set_xlabel("assigned score", fontsize=8)
        if i == 0:
            a.set_ylabel("true score", fontsize=8)
        a.set_title(f"prior mean θ, M = 5, β_max = {beta:g}", fontsize=9)
    out = Path(__file__).parent / "simplex-prior.png"
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
