"""Plots of a simplex fit (matplotlib, written to PNG files).

- :func:`rank_plot`: every candidate's rank posterior (95% shortest interval, mean rank), true
  ranks when known (the paper's Fig. 7).
- :func:`sensitivity_plot`: Spearman of each setting's ranking with the base fit, against ω and
  against β_max (Fig. 6, top).
- :func:`simplex_plot`: one triangle per judge (Fig. 6, bottom): the candidates' observed score
  distributions as points, and the judge's vertices — its confusion-matrix rows, one per true
  level — from posterior draws (thin) and the posterior mean (thick). M = 3 draws triangles; a
  larger M is collapsed to 3 assigned levels first (App. D.6, e.g. 1,1,2,2,3), so the M vertices
  form a path from true level 1 to true level M inside the triangle.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..plotting import pyplot, save

__all__ = ["rank_plot", "sensitivity_plot", "simplex_plot", "DEFAULT_COLLAPSE"]

DEFAULT_COLLAPSE = {3: [1, 2, 3], 5: [1, 1, 2, 2, 3]}
"""App. D.6's TLDR mapping for 5 levels ({1, 2} → 1, {3, 4} → 2, {5} → 3)."""

_CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])


def rank_plot(report, path: str | Path) -> Path:
    """Rank intervals of a :class:`~orchestrator.offline.simplex.fit.SimplexReport`, best at the top."""
    plt = pyplot()
    rows = report.candidates
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.6))
    y = np.arange(len(rows))[::-1]
    for yy, r in zip(y, rows):
        ax.plot([r.rank_low, r.rank_high], [yy, yy], color="tab:blue", lw=4, alpha=0.5, solid_capstyle="butt")
        ax.plot(r.rank_mean, yy, "o", color="tab:blue", ms=5)
        if r.true_rank is not None:
            ax.plot(r.true_rank, yy, "x", color="tab:red", ms=7, mew=2)
    ax.set_yticks(y, [r.candidate for r in rows])
    ax.set_xlabel(
        f"rank (1 = best): {report.level:.0%} credible interval, mean rank" + (" ; × true rank" if any(r.true_rank for r in rows) else "")
    )
    ax.set_xlim(0.5, len(rows) + 0.5)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"Bayesian simplex model: {report.label}", fontsize=9)
    return save(fig, path)


def sensitivity_plot(report, path: str | Path) -> Path:
    """Spearman with the base fit against ω (β_max = 5) and β_max (ω = 0)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, (param, name) in zip(
        axes, (("omega", "ω (random-effect strength), β_max = 5"), ("beta_max", "β_max (judge discrimination prior), ω = 0"))
    ):
        rows = [s for s in report.sensitivity or [] if s.parameter == param]
        xs = [s.value for s in rows]
        ys = [np.nan if s.spearman_vs_base is None else s.spearman_vs_base for s in rows]
        ax.plot(xs, ys, "o-")
        ax.axhline(0.9, color="grey", ls="--", lw=0.8)
        ax.set_xlabel(name)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Spearman with the base ranking")
    lows = [s.spearman_vs_base for s in report.sensitivity or [] if s.spearman_vs_base is not None]
    axes[0].set_ylim(min([0.5] + lows) - 0.05, 1.02)
    fig.suptitle("Sensitivity of the ranking to the priors (simplex paper §5.4)", fontsize=10)
    return save(fig, path)


def _xy(p: np.ndarray) -> np.ndarray:
    """Barycentric (…, 3) → plane (…, 2)."""
    return p @ _CORNERS


def simplex_plot(fit, data, path: str | Path, *, collapse: list[int] | None = None, n_draws: int = 60, seed: int = 0) -> Path:
    """Judges' vertex configurations from posterior draws and the candidates on the triangle."""
    from ...errors import OrchestratorError

    plt = pyplot()
    mapping = collapse or DEFAULT_COLLAPSE.get(data.levels)
    if mapping is None:
        raise OrchestratorError(
            f"a simplex plot of {data.levels} levels needs --collapse (e.g. "
            f"{','.join(str(1 + (3 * s) // data.levels) for s in range(data.levels))})"
        )
    if len(mapping) != data.levels or max(mapping) != 3:
        raise OrchestratorError("--collapse must map every level to 1, 2 or 3 (three levels for the triangle)")
    onehot = np.zeros((data.levels, 3))
    onehot[np.arange(data.levels), np.asarray(mapping) - 1] = 1.0
    counts = data.counts(fit.settings.soft) @ onehot  # (J, K, 3)
    theta = fit.flat("theta") @ onehot  # (S, J, M, 3): rows = true levels, collapsed assigned levels
    rng = np.random.default_rng(seed)
    pick = rng.choice(theta.shape[0], size=min(n_draws, theta.shape[0]), replace=False)
    n_j = len(fit.judges)
    cols = min(n_j, 3)
    fig, axes = plt.subplots(math.ceil(n_j / cols), cols, figsize=(4.2 * cols, 3.9 * math.ceil(n_j / cols)), squeeze=False)
    for j, ax in enumerate(axes.ravel()):
        if j >= n_j:
            ax.axis("off")
            continue
        ax.plot(*np.vstack([_CORNERS, _CORNERS[:1]]).T, color="black", lw=0.8)
        for s in pick:
            path_xy = _xy(theta[s, j])
            ax.plot(*(np.vstack([path_xy, path_xy[:1]]) if data.levels == 3 else path_xy).T, color="tab:blue", lw=0.5, alpha=0.15)
        mean_xy = _xy(theta[:, j].mean(0))
        ax.plot(*(np.vstack([mean_xy, mean_xy[:1]]) if data.levels == 3 else mean_xy).T, "-", color="navy", lw=1.5)
        for m, (x, yv) in enumerate(mean_xy):
            ax.annotate(f"θ{m + 1}", (x, yv), fontsize=7, color="navy", xytext=(3, 3), textcoords="offset points")
        total = counts[j].sum(axis=1)
        seen = total > 0
        pts = _xy(counts[j][seen] / total[seen, None])
        ax.scatter(pts[:, 0], pts[:, 1], s=14, color="tab:orange", zorder=3)
        for (x, yv), name in zip(pts, np.asarray(fit.candidates)[seen]):
            ax.annotate(name, (x, yv), fontsize=6, xytext=(2, -7), textcoords="offset points")
        low = "{" + ",".join(str(s + 1) for s in range(data.levels) if mapping[s] == 1) + "}"
        mid = "{" + ",".join(str(s + 1) for s in range(data.levels) if mapping[s] == 2) + "}"
        high = "{" + ",".join(str(s + 1) for s in range(data.levels) if mapping[s] == 3) + "}"
        for (x, yv), lab, dx in zip(_CORNERS, (low, mid, high), (-14, 4, -8)):
            ax.annotate(lab, (x, yv), fontsize=7, xytext=(dx, -10 if yv == 0 else 4), textcoords="offset points")
        ax.set_title(fit.judges[j], fontsize=9)
        ax.set_aspect("equal")
        ax.axis("off")
    fig.suptitle(
        "Judges' vertices (posterior draws) and candidates on the simplex"
        + (f" — {data.levels} levels collapsed {','.join(map(str, mapping))}" if data.levels != 3 else ""),
        fontsize=10,
    )
    return save(fig, path)
