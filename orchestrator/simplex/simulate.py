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

import math

import numpy as np
from scipy.stats import norm

from .data import ScoreData, build_score_data
from .prior import confusion_matrix, edge_concentrations

__all__ = ["from_model", "misspecified", "sample_confusion", "panel", "panel_with_levels", "PANEL_SHAPES"]


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
    truth = _expected_level(mu, levels, sd=1.0)
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


PANEL_SHAPES = ("dominant", "compressed", "mixed", "wide")
"""The shapes of :func:`panel` (the simulation test bed): a dominant candidate above a close pack, judge
scales compressed or shifted, judges of very different quality, many candidates."""


def _expected_level(mu: np.ndarray, levels: int, *, sd: float) -> np.ndarray:
    """``E[S*_k]`` when quality ~ N(μ_k, sd²) is cut into M levels at the standard cut-points
    (linspace(−1.5, 1.5)): ``P(S* = m) = Φ((c_m − μ)/sd) − Φ((c_{m−1} − μ)/sd)``."""
    edges = np.concatenate([[-np.inf], np.linspace(-1.5, 1.5, levels - 1), [np.inf]])
    probs = norm.cdf((edges[None, 1:] - mu[:, None]) / sd) - norm.cdf((edges[None, :-1] - mu[:, None]) / sd)
    return probs @ np.arange(1, levels + 1)


def _judge_kind(kind: str, levels: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """A judge kind's cut-points on the latent quality and its noise sd."""
    base = np.linspace(-1.5, 1.5, levels - 1)
    if kind == "good":
        return base + rng.normal(0.0, 0.1, levels - 1), rng.uniform(0.3, 0.6)
    if kind == "compressed":  # lives at the middle of the scale: the bottom answers get the middle score
        mid = levels // 2
        cuts = np.concatenate([base[:mid] - 1.2 - rng.uniform(0.0, 0.5), base[mid:] + 0.6 + rng.uniform(0.0, 0.8)])
        return np.sort(cuts), rng.uniform(0.4, 0.8)
    if kind == "lenient":  # every score one level up
        return base - 1.0 + rng.normal(0.0, 0.1, levels - 1), rng.uniform(0.4, 0.8)
    if kind == "noisy":
        return base + rng.normal(0.0, 0.2, levels - 1), rng.uniform(1.5, 2.2)
    raise ValueError(kind)


def panel(
    shape: str, *, seed: int = 0, n_candidates: int | None = None, n_judges: int = 5, questions: int = 96, levels: int = 5, samples: int = 3
) -> tuple[ScoreData, np.ndarray]:
    """:func:`panel_with_levels` without the answers' true levels."""
    data, truth, _ = panel_with_levels(
        shape, seed=seed, n_candidates=n_candidates, n_judges=n_judges, questions=questions, levels=levels, samples=samples
    )
    return data, truth


def panel_with_levels(
    shape: str,
    *,
    seed: int = 0,
    n_candidates: int | None = None,
    n_judges: int = 5,
    questions: int = 96,
    levels: int = 5,
    samples: int = 3,
    shared_bias: float = 0.0,
) -> tuple[ScoreData, np.ndarray, np.ndarray]:
    """A judge panel of the shapes real multi-judge score sets have — an ordinal world the
    model does not assume; the truth is the exact ``E[S*_k]`` with the standard cut-points.

    Answers have latent quality ``μ_k + ε`` (ε ~ N(0, 1)) plus an item effect every judge sees; each
    judge scores through its own cut-points and noise, and reports the rounded mean of ``samples``
    noisy readings (as score sets built from several samples per judge do). Shapes:

    - ``dominant``: one candidate far above a close pack (E[S*] ≈ 3.4 vs 1.3–2.1), mixed judges;
    - ``compressed``: judges living in the middle of the scale (bottom answers scored 3, 1 and 5 rare),
      one judge one level lenient, one judge exact at the bottom and flat above;
    - ``mixed``: judges from near-exact to near-random;
    - ``wide``: 20 candidates spread evenly, mixed judges.

    ``shared_bias`` moves every judge's reading of candidate ``cand00``'s answers by that much (in
    units of the latent quality's sd; negative = all judges underrate it) — a bias the judges share,
    which their own data cannot reveal and people's labels can. Also returns each
    answer's true level ``(K, Q)`` (1..M, the standard cut-points), what a person's label would be.
    """
    if shape not in PANEL_SHAPES:
        raise ValueError(f"unknown panel shape {shape!r}; one of {', '.join(PANEL_SHAPES)}")
    rng = np.random.default_rng(seed)
    k = n_candidates or {"dominant": 11, "compressed": 11, "mixed": 12, "wide": 20}[shape]
    if shape in ("dominant", "compressed"):
        mu = np.concatenate([[0.9 + rng.uniform(-0.2, 0.2)], rng.uniform(-2.0, -0.8, k - 1)])
        rng.shuffle(mu)
    elif shape == "wide":
        mu = np.sort(rng.uniform(-1.8, 1.2, k))[rng.permutation(k)]
    else:
        mu = rng.normal(-0.3, 0.7, k)
    if shape == "compressed":
        kinds = ["compressed", "compressed", "lenient", "floor", "good"]
    elif shape == "mixed":
        kinds = ["good", "noisy", "noisy", "compressed", "good"]
    else:
        kinds = list(rng.choice(["good", "compressed", "lenient", "noisy"], size=n_judges, p=[0.35, 0.25, 0.2, 0.2]))
    kinds = (kinds * n_judges)[:n_judges]
    cuts = np.linspace(-1.5, 1.5, levels - 1)
    item_sd = 0.4
    truth = _expected_level(mu, levels, sd=math.sqrt(1.0 + item_sd**2))
    quality = mu[:, None] + rng.normal(size=(k, questions)) + rng.normal(0.0, item_sd, size=(k, questions))
    true_levels = 1 + np.searchsorted(cuts, quality)
    seen_quality = quality.copy()
    seen_quality[0] += shared_bias
    scores = np.zeros((n_judges, k, questions), dtype=int)
    for j, kind in enumerate(kinds):
        if kind == "floor":  # exact at the bottom level, no information above it
            bottom = seen_quality < cuts[0]
            scores[j] = np.where(bottom, 1, rng.integers(2, levels + 1, size=quality.shape))
            continue
        judge_cuts, noise = _judge_kind(str(kind), levels, rng)
        reads = 1 + np.searchsorted(judge_cuts, seen_quality[None] + rng.normal(0.0, noise, size=(samples,) + quality.shape))
        scores[j] = np.clip(np.rint(reads.mean(axis=0) + 1e-9), 1, levels).astype(int)
    judges = [f"{kind}{j}" for j, kind in enumerate(kinds)]
    cands = [f"cand{i:02d}" for i in range(k)]
    return build_score_data(_records(scores, judges, cands), levels=levels), truth, true_levels
