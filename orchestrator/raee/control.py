"""Length-controlled win rates and degenerate candidates: pure functions on arrays.

AlpacaEval 2.0's headline figure (Dubois et al. 2024, "Length-controlled AlpacaEval") asks what a
judge's preference against the anchor would be if both answers had the same length. Per candidate
m a logistic model of the soft outcome ``y[m, i]`` (P(candidate beats anchor) on prompt i),

    logit E[y_mi] = θ_m + φ_m · tanh(Δ_mi / sd_m(Δ)) + ψ_m · γ_i,                         (1)

Δ_mi the candidate's length minus the anchor's on prompt i (characters), γ_i the prompt's
difficulty; the controlled win rate is the mean prediction at Δ = 0:

    LC_m = 100 · mean_i σ(θ_m + ψ_m γ_i).                                                  (2)

Two departures from AlpacaEval's code, both because its inputs are not available here:

- γ is not downloaded: it is estimated from the log itself, as AlpacaEval estimated it, by a joint
  fit over every candidate (every candidate answered the same prompts): ``logit E[y_mi] = a_m +
  c_m · tanh(…) + γ_i`` with a N(0, 1) prior on γ, by alternating Newton steps
  (:func:`prompt_difficulty`).
- AlpacaEval keeps φ_m from absorbing quality by fitting, beside each model, the anchor's own
  answers rewritten verbose and concise (same quality, other lengths). Those are not in a user's
  log either; the same role is played by a hierarchical prior: the length slope is the *judge's*
  taste, shared by its candidates, ``φ_m ~ N(φ, s²)`` with ``s = SLOPE_SD``, φ the median of the
  φ_m (the mean would let one gamed candidate — a constant answer whose win rate ignores length —
  pull every other candidate's correction). On the 36 AlpacaEval models of ``../shared/data`` this
  reproduces the official length-controlled column with Spearman 0.986
  (``benchmarks/bias/length_control.py``).

Intervals: the judge's length effect φ gets the normal-hierarchical precision ``Σ_m 1 / (V_m +
s²)``, V_m the data-only variance of φ_m; a controlled win rate the delta method on its
candidate's sandwich covariance ``H⁻¹ (Σ_i s_i s_iᵀ) H⁻¹`` (per-prompt scores, so soft outcomes
are not treated as coin flips) plus, in quadrature, how far one sd of φ moves it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, ndtri

__all__ = ["SLOPE_SD", "LengthControl", "candidate_flags", "length_controlled", "length_feature", "prompt_difficulty"]

SLOPE_SD = 0.2
"""Prior sd of a candidate's length slope φ_m around the judge's φ (log-odds per unit of the tanh
feature). Measured on AlpacaEval (``benchmarks/bias/length_control.py``), Spearman with the official
column / largest difference: 0.1 → 0.969 / 6.5 points, 0.2 → 0.986 / 2.6, 0.3 → 0.986 / 4.6,
0.5 → 0.978 / 8.6; a free
slope (AlpacaEval without its verbose/concise anchor answers) absorbs quality and misplaces
concise models by up to 18 points."""

WEAK_PRECISION = 1e-2
"""Prior precision of θ_m and ψ_m (sd 10 in log-odds: keeps a candidate that always wins finite)."""


@dataclass(frozen=True)
class LengthControl:
    """Per candidate (rows of ``y``): raw and length-controlled win rates in percent, the
    controlled one's interval, the length slope φ_m; the judge's length effect φ with its interval,
    and ``points_per_sd``: win-rate points an answer one sd longer gains at an even match."""

    win_rate: np.ndarray
    controlled: np.ndarray
    controlled_low: np.ndarray
    controlled_high: np.ndarray
    slope: np.ndarray
    length_effect: float
    length_effect_low: float
    length_effect_high: float
    points_per_sd: float
    difficulty: np.ndarray


def length_feature(candidate_length: np.ndarray, anchor_length: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """``tanh(Δ_mi / sd_m(Δ))`` (AlpacaEval's ``np.tanh(std_delta_len)``, Eq. 1): Δ the candidate's
    length minus the anchor's, sd over the candidate's judged prompts; 0 where not judged or where
    Δ does not vary."""
    delta = np.where(seen, candidate_length - anchor_length[None, :], np.nan)
    n = seen.sum(1)
    mean = np.nansum(delta, 1) / np.maximum(n, 1)
    sd = np.sqrt(np.nansum((delta - mean[:, None]) ** 2, 1) / np.maximum(n - 1, 1))
    scaled = np.where(seen & (sd[:, None] > 0), delta / np.where(sd > 0, sd, 1.0)[:, None], 0.0)
    return np.tanh(np.nan_to_num(scaled))


def _newton(x, y, weight, precision, mean, start, *, offset=0.0, steps: int = 50):
    """Per-row MAP of a logistic model with soft targets: ``x`` (M, P, K), ``y``/``weight``/
    ``offset`` (M, P), Gaussian prior N(mean, diag(1/precision)); returns ``(b, H)``, H the
    posterior precision."""
    b = start.copy()
    prior = np.diag(precision)
    hessian = np.zeros((x.shape[0], x.shape[2], x.shape[2]))
    for _ in range(steps):
        p = expit(np.einsum("mpk,mk->mp", x, b) + offset)
        grad = np.einsum("mpk,mp->mk", x, weight * (y - p)) - precision * (b - mean)
        hessian = np.einsum("mpk,mpl,mp->mkl", x, x, weight * p * (1 - p)) + prior
        step = np.linalg.solve(hessian, grad[..., None])[..., 0]
        b = b + np.clip(step, -5.0, 5.0)
        if np.abs(step).max() < 1e-9:
            break
    return b, hessian


def prompt_difficulty(y: np.ndarray, feature: np.ndarray, *, sweeps: int = 30) -> np.ndarray:
    """γ_i of Eq. (1) from the log: a joint fit ``logit E[y_mi] = a_m + c_m f_mi + γ_i`` over every
    candidate, N(0, 1) prior on γ, alternating Newton steps; centred. Higher γ: the candidates do
    better on the prompt."""
    seen = ~np.isnan(y)
    weight, target = seen.astype(float), np.where(seen, y, 0.0)
    coef = np.zeros((y.shape[0], 2))
    gamma = np.zeros(y.shape[1])
    x = np.stack([np.ones_like(feature), feature], axis=-1)
    precision, mean = np.full(2, WEAK_PRECISION), np.zeros(2)
    for _ in range(sweeps):
        coef, _ = _newton(x, target, weight, precision, mean, coef, offset=gamma[None, :], steps=20)
        base = coef[:, 0:1] + coef[:, 1:2] * feature
        for _ in range(5):
            p = expit(base + gamma[None, :])
            gamma = gamma + ((weight * (target - p)).sum(0) - gamma) / ((weight * p * (1 - p)).sum(0) + 1.0)
        gamma = gamma - gamma[seen.any(0)].mean() if seen.any() else gamma
    return gamma


def length_controlled(
    y: np.ndarray,
    candidate_length: np.ndarray,
    anchor_length: np.ndarray,
    *,
    level: float = 0.95,
    slope_sd: float = SLOPE_SD,
    sweeps: int = 15,
) -> LengthControl:
    """Eq. (1)–(2) for every candidate of ``y`` (candidates × prompts, outcomes in [0, 1], NaN
    where not judged); lengths in characters (``candidate_length`` like ``y``, ``anchor_length``
    per prompt). See the module docstring for the model, the prior and the intervals."""
    seen = ~np.isnan(y)
    n = seen.sum(1)
    weight, target = seen.astype(float), np.where(seen, y, 0.0)
    feature = length_feature(candidate_length, anchor_length, seen)
    gamma = prompt_difficulty(y, feature)
    x = np.stack([np.ones_like(feature), feature, np.broadcast_to(gamma, feature.shape)], axis=-1)
    m = y.shape[0]
    precision = np.array([WEAK_PRECISION, 1.0 / slope_sd**2, WEAK_PRECISION])
    b = np.zeros((m, 3))
    effect = 0.0
    for _ in range(sweeps):
        mean = np.array([0.0, effect, 0.0])
        b, hessian = _newton(x, target, weight, precision, mean, b)
        new_effect = float(np.median(b[n > 0, 1])) if (n > 0).any() else 0.0
        if abs(new_effect - effect) < 1e-8:
            effect = new_effect
            break
        effect = new_effect
    p = expit(np.einsum("mpk,mk->mp", x, b))
    scores = x * (weight * (target - p))[..., None]
    meat = np.einsum("mpk,mpl->mkl", scores, scores)
    bread = np.linalg.inv(hessian)
    covariance = bread @ meat @ bread
    data_only = hessian.copy()
    data_only[:, 1, 1] -= precision[1]
    slope_variance = np.array([np.linalg.pinv(h)[1, 1] for h in data_only])
    effect_se = float(np.sqrt(1.0 / np.sum(1.0 / (slope_variance[n > 0] + slope_sd**2)))) if (n > 0).any() else 0.0
    controlled_x = x.copy()
    controlled_x[..., 1] = 0.0
    counts = np.maximum(n, 1)
    q = expit(np.einsum("mpk,mk->mp", controlled_x, b))
    controlled = 100 * (weight * q).sum(1) / counts
    gradient = np.einsum("mpk,mp->mk", controlled_x, weight * q * (1 - q)) / counts[:, None]
    variance = 100**2 * np.maximum(np.einsum("mk,mkl,ml->m", gradient, covariance, gradient), 0.0)
    # the judge's φ is estimated too: add how far one sd of it moves each controlled win rate
    moved, _ = _newton(x, target, weight, precision, np.array([0.0, effect + effect_se, 0.0]), b)
    sensitivity = 100 * (weight * expit(np.einsum("mpk,mk->mp", controlled_x, moved))).sum(1) / counts - controlled
    se = np.sqrt(variance + sensitivity**2)
    z = float(ndtri(0.5 + level / 2))
    raw = 100 * target.sum(1) / counts
    return LengthControl(
        win_rate=np.where(n > 0, raw, np.nan),
        controlled=np.where(n > 0, controlled, np.nan),
        controlled_low=np.where(n > 0, np.clip(controlled - z * se, 0, 100), np.nan),
        controlled_high=np.where(n > 0, np.clip(controlled + z * se, 0, 100), np.nan),
        slope=b[:, 1],
        length_effect=effect,
        length_effect_low=effect - z * effect_se,
        length_effect_high=effect + z * effect_se,
        points_per_sd=float(100 * (expit(effect * np.tanh(1.0)) - 0.5)),
        difficulty=gamma,
    )


def candidate_flags(texts: dict[str, list[str]], *, repeated_share: float = 0.25, empty_share: float = 0.5) -> dict[str, list[str]]:
    """Candidates whose answers game a judge rather than answer the prompts: ``texts`` maps a
    candidate to its answers (one per prompt). Flags an answer shared by at least
    ``repeated_share`` of its prompts (at least 3; "constant" when it answers 90% or more, a
    canned text "copied across prompts" otherwise) and blank answers on ``empty_share`` or more."""
    flags: dict[str, list[str]] = {}
    for candidate, answers in texts.items():
        if not answers:
            continue
        reasons = []
        normalised = [" ".join(a.split()) for a in answers]
        blank = sum(1 for a in normalised if not a) / len(answers)
        if blank >= empty_share:
            reasons.append(f"empty answers on {blank:.0%} of its prompts")
        text, count = Counter(a for a in normalised if a).most_common(1)[0] if blank < 1 else ("", 0)
        share = count / len(answers)
        if count >= 3 and share >= repeated_share:
            kind = "constant: one answer" if share >= 0.9 else "copied across prompts: one answer"
            reasons.append(f"{kind} on {share:.0%} of its prompts ({len(text)} characters)")
        if reasons:
            flags[candidate] = reasons
    return flags
