"""Judges scoring candidates with a known truth, for the simplex model's simulation study.

Two generators:

- :func:`from_model` draws from the model itself (§5, App. B): prevalences ``π̄_k ~ Dir(1)``,
  confusion matrices from the weight-propagation prior, optional random effects (ω); each answer's
  true score is shared by the judges that score it.
- :func:`misspecified` is *not* the model: answers have a continuous latent quality
  ``μ_k + ε`` cut into M true levels; each judge sees it through its own noise, its own cut-points
  (lenient or harsh), a candidate-specific leniency (constancy violated) and an item effect shared
  by all judges (correlated errors) — an ordinal-probit world, closer to real judges.

Both return the :class:`ScoreData` and the true expected scores ``E[S*_k]``.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from .data import ScoreData, build_score_data
from .prior import confusion_matrix, edge_concentrations

__all__ = ["from_model", "misspecified", "sample_confusion"]


def sample_confusion(n_judges: int, levels: int, beta_max: float, rng: np.random.Generator) -> np.ndarray:
    """``(J, M, M)`` confusion matrices drawn from the weight-propagation prior (ρ_j ~ U(0, 1))."""
    rho = rng.uniform(size=n_judges)
    root = rng.dirichlet(np.ones(levels), size=n_judges)
    steps = [
        np.stack([[rng.dirichlet(row) for row in conc[j]] for j in range(n_judges)]) for conc in edge_concentrations(levels, rho * beta_max)
    ]
    return confusion_matrix(root, steps)


def _records(scores: np.ndarray, judges: list[str], candidates: list[str]) -> list[tuple[str, str, str, dict]]:
    return [
        (judges[j], candidates[k], f"q{i:04d}", {str(int(scores[j, k, i])): 1.0})
        for j in range(scores.shape[0])
        for k in range(scores.shape[1])
        for i in range(scores.shape[2])
    ]


def from_model(
    n_judges: int, n_candidates: int, levels: int, questions: int, *, beta_max: float = 5.0, omega: float = 0.0, seed: int = 0
) -> tuple[ScoreData, np.ndarray]:
    """Data drawn from the simplex model; the truth is ``Σ_m m·π̄_{k,m}``."""
    rng = np.random.default_rng(seed)
    theta = sample_confusion(n_judges, levels, beta_max, rng)
    pi_bar = rng.dirichlet(np.ones(levels), size=n_candidates)
    pi = np.broadcast_to(pi_bar, (n_judges, n_candidates, levels)).copy()
    if omega > 0:
        z = rng.dirichlet(np.ones(levels), size=n_candidates)
        r = rng.beta(omega * n_judges, n_judges, size=n_judges)
        w = rng.beta(omega * n_candidates, n_candidates, size=n_candidates)
        mix = (r[:, None] * w[None, :])[..., None]
        pi = (1 - mix) * pi_bar[None] + mix * z[None]
    scores = np.zeros((n_judges, n_candidates, questions), dtype=int)
    for k in range(n_candidates):
        shared = rng.choice(levels, size=questions, p=pi_bar[k])
        for j in range(n_judges):
            true = shared if omega == 0 else rng.choice(levels, size=questions, p=pi[j, k])
            u = rng.random(questions)[:, None]
            scores[j, k] = 1 + (u > np.cumsum(theta[j, true], axis=1)).sum(axis=1).clip(max=levels - 1)
    judges = [f"judge{j}" for j in range(n_judges)]
    cands = [f"cand{k:02d}" for k in range(n_candidates)]
    return build_score_data(_records(scores, judges, cands), levels=levels), pi_bar @ np.arange(1, levels + 1)


def misspecified(
    n_judges: int,
    n_candidates: int,
    levels: int,
    questions: int,
    *,
    seed: int = 0,
    judge_noise: tuple[float, float] = (0.4, 1.5),
    leniency_sd: float = 0.3,
    item_sd: float = 0.4,
) -> tuple[ScoreData, np.ndarray]:
    """An ordinal-probit world the model does not assume (module docstring); the truth is the
    exact ``E[S*_k]`` under the latent-quality model."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0.0, 0.8, size=n_candidates)
    cuts = np.linspace(-1.5, 1.5, levels - 1)
    edges = np.concatenate([[-np.inf], cuts, [np.inf]])
    # quality ~ N(μ_k, 1): P(S* = m) = Φ(c_m − μ) − Φ(c_{m−1} − μ)
    probs = norm.cdf(edges[None, 1:] - mu[:, None]) - norm.cdf(edges[None, :-1] - mu[:, None])
    truth = probs @ np.arange(1, levels + 1)
    quality = mu[:, None] + rng.normal(size=(n_candidates, questions))
    item = rng.normal(0.0, item_sd, size=(n_candidates, questions))  # seen by every judge
    scores = np.zeros((n_judges, n_candidates, questions), dtype=int)
    for j in range(n_judges):
        noise = rng.uniform(*judge_noise)
        shift = rng.normal(0.0, 0.5)  # lenient (> 0) or harsh
        judge_cuts = np.sort(cuts - shift + rng.normal(0.0, 0.2, size=levels - 1))
        lenient = rng.normal(0.0, leniency_sd, size=n_candidates)  # constancy violated
        seen = quality + item + lenient[:, None] + rng.normal(0.0, noise, size=quality.shape)
        scores[j] = 1 + np.searchsorted(judge_cuts, seen)
    judges = [f"judge{j}" for j in range(n_judges)]
    cands = [f"cand{k:02d}" for k in range(n_candidates)]
    return build_score_data(_records(scores, judges, cands), levels=levels), truth
