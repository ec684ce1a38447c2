"""Posterior inference for the simplex model: NUTS (numpyro), diagnostics, rankings, sensitivity.

Why numpyro rather than pyro-ppl on torch: the same model under pyro's NUTS costs
tens of milliseconds per iteration in Python-level tree building on 2 cores — minutes to hours for
4 × 2000 iterations — while numpyro compiles the whole sampler with JAX and runs the speed goal
(K = 12, J = 5, M = 5, 100 questions, 4 × (1000 + 1000)) in well under a minute;
``benchmarks/speed/simplex_backend.py`` measures both and ``benchmarks/RESULTS.md`` has the numbers.

Sampler settings, measured on SummEval (benchmarks/RESULTS.md): a diagonal mass matrix and target
acceptance 0.95. The posterior has a weakly identified direction — the absolute level of the
latent scale (which true level a judge's habitual score corresponds to; Theorem 2) — that a dense
metric adapted poorly on (7× slower, no better R-hat); 0.95 instead of 0.8 keeps chains from
settling at different points along it. Chains run in parallel on host devices when there are
enough, else one after the other.

Convergence is checked where the ranking lives: the split R-hat of the *standardised* expected
scores (each draw minus its mean over candidates, divided by their spread — ranks do not change
when every candidate moves or stretches by the same amount, and the latent scale's location and
spread are exactly what Theorem 2 leaves weakly identified). R-hat of the centred and of the raw
expected scores and the maximum over every parameter are reported too; above 1.01 they mean the
absolute level or spread of the scale mixes slowly, not that the ranking is wrong.

Defaults: β_max = 5 fixed (the paper's base value, §5.4). Integrated over its
hyperprior U(0, 20), β_max couples every judge's discrimination ρ_j·β_max, and on panels of judges
of very different quality the posterior is bimodal: "β_max small, every judge mildly
discriminating" against "β_max large, strong judges sharp and the weak one at ρ ≈ 0" — two readings
of the latent scale's spread, 30 nats apart in log density, which NUTS chains do not cross (ranking
R-hat 1.37 on the test bed's ``mixed`` replicate 1; benchmarks/validity/simplex_foreign.py). With β_max fixed
each judge's ρ_j still sets its own discrimination and the chains mix; the ``--sweep`` shows
β_max's effect and ``beta_max=None`` (``--beta-max prior``) integrates it as the paper's Table 1 did.
ω = 1 (constancy relaxed by random effects of expected magnitude ≈ 0.5, the paper's
second sweep value; with ω = 0 the rank intervals covered 0.875 of SummEval's expert
ranks, with ω = 1 0.938 — the random effects are the model's only room for a judge panel that
shares a candidate-specific bias, which the judges' own data cannot reveal), counts weighted by
1/design effect, and β_max integrated over its hyperprior. With
``omega=None`` ω is integrated too (the paper's Table 1 fit); on SummEval that posterior is bimodal
(ω ≈ 0.2 and ≈ 7, NUTS chains stay in the mode they find), so :class:`SimplexFit` reports each
chain's ω, log density and ranking, and warns when chains disagree. The sensitivity sweep (fixed ω,
which mixes well) is the reliable view of ω's effect.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .data import ScoreData
from .diagnostics import chain_report, ranking_draws, split_diagnostics
from .sampler import Sampler, structure
from .settings import SimplexSettings

__all__ = ["SimplexSettings", "SimplexFit", "fit_simplex", "fit_or_fallback", "fallback_settings", "RHAT_LIMIT"]

RHAT_LIMIT = 1.01


@dataclass
class SimplexFit:
    """Posterior draws (grouped by chain) and their summaries."""

    settings: SimplexSettings
    candidates: list[str]
    judges: list[str]
    levels: int
    draws: dict[str, np.ndarray]
    """``expected (C, S, K)``, ``pi_bar (C, S, K, M)``, ``theta (C, S, J, M, M)``, ``rho``, and
    ``omega``/``beta_max``/``tau`` when sampled."""
    rhat: dict[str, float]
    """Max split R-hat per site; ``ranking`` (the expected scores standardised per draw: minus their
    mean over candidates, divided by their spread) is what the ranks depend on and what the
    convergence check uses; ``expected_centred`` (minus the mean only) is reported beside it."""
    ess: dict[str, float]
    """Min effective sample size per site."""
    divergences: int
    seconds: float
    chains: list[dict] = field(default_factory=list)
    """Per chain: mean potential energy (−log density), ω when sampled, and the Spearman
    correlation of the chain's mean expected scores with the pooled ones (modes show up here)."""
    warnings: list[str] = field(default_factory=list)
    labelled: int = 0
    """Answers with a human label (true level) in the fit."""
    fallback_from: dict | None = None
    """Set when this is :func:`fit_or_fallback`'s fallback: the settings label, ranking R-hat and
    per-chain report of the requested fit that did not converge."""

    # -- summaries -------------------------------------------------------------------------
    def flat(self, name: str) -> np.ndarray:
        x = self.draws[name]
        return x.reshape((-1,) + x.shape[2:])

    @property
    def expected_mean(self) -> np.ndarray:
        return self.flat("expected").mean(0)

    def expected_interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = np.quantile(self.flat("expected"), [(1 - level) / 2, (1 + level) / 2], axis=0)
        return lo, hi

    def ranks(self, level: float = 0.95):
        """Rank posterior of the expected true scores (rank 1 = best): shortest ``level`` intervals."""
        from ..poe.uncertainty import rank_intervals_from_draws

        return rank_intervals_from_draws(self.flat("expected"), level=level)

    def confusion_mean(self) -> np.ndarray:
        """``(J, M, M)`` posterior mean confusion matrices (rows: true level, columns: assigned)."""
        return self.flat("theta").mean(0)

    @property
    def max_rhat(self) -> float:
        return max((v for v in self.rhat.values() if not math.isnan(v)), default=math.nan)  # one chain: no R-hat

    @property
    def converged(self) -> bool:
        """The ranked quantity's chains agree (standardised expected scores' R-hat ≤ 1.01)."""
        return not self.rhat.get("ranking", math.nan) > RHAT_LIMIT


def _check(data: ScoreData, settings: SimplexSettings) -> list[str]:
    from ..errors import OrchestratorError

    # the settings checked themselves (SimplexSettings.__post_init__); what needs the data is here
    if settings.delta is not None and len(settings.delta) != data.levels:
        raise OrchestratorError(f"delta (--delta) needs {data.levels} positive numbers, one per level (got {len(settings.delta)})")
    counts = data.counts(settings.soft)
    if settings.self_preference == "exclude":
        counts = counts * ~data.self_pairs[:, :, None]
    warnings = []
    if counts.sum() == 0:
        raise OrchestratorError("no scores left to fit (every judgment is self-judging and excluded)")
    unscored = [c for k, c in enumerate(data.candidates) if counts[:, k].sum() == 0]
    if unscored:
        warnings.append(
            f"{len(unscored)} candidate(s) have no (non-self) scores: {', '.join(unscored[:8])}; their expected score is the prior's"
        )
    if len(data.candidates) == 1:
        warnings.append("one candidate: its rank is 1 by definition; the expected true score still depends on the judge-quality prior")
    used = np.flatnonzero(counts.sum(axis=(0, 1)))
    if used.size == 1:
        warnings.append(
            f"every score is {used[0] + 1}: the data cannot separate the candidates (rank intervals span "
            "every rank) and the expected scores come from the priors"
        )
    if settings.chains < 2:
        warnings.append("one chain: R-hat cannot be computed; run ≥ 2 chains to check convergence")
    return warnings


def fit_simplex(
    data: ScoreData,
    settings: SimplexSettings = SimplexSettings(),
    *,
    labels: np.ndarray | None = None,
    progress: bool = False,
    sampler: Sampler | None = None,
) -> SimplexFit:
    """Sample the posterior of the simplex model (module docstring of :mod:`.model`) with NUTS;
    ``labels`` ``(K, Q)``: people's true levels of answers, 0 = unlabelled (:func:`.data.label_grid`).

    Raises:
        OrchestratorError: invalid settings or nothing to fit.
    """
    warnings = _check(data, settings)
    if settings.count_weight is None:
        from .data import design_effect

        weight = 1.0 if settings.likelihood == "answers" else 1.0 / design_effect(data, soft=settings.soft)
        settings = replace(settings, count_weight=weight)
    shift = settings.self_preference == "shift" and bool(data.self_pairs.any())
    started = time.perf_counter()
    sampler = sampler or Sampler(data.levels, structure(settings, shift), settings, progress)
    samples, divergences = sampler.run(data, settings, labels)
    seconds = time.perf_counter() - started
    energy = samples.pop("potential_energy")
    expected = samples["expected"]
    samples["expected_centred"] = expected - expected.mean(axis=-1, keepdims=True)
    samples["ranking"] = ranking_draws(expected)
    rhat, ess = split_diagnostics(samples, settings.chains)
    del samples["expected_centred"], samples["ranking"]
    fit = SimplexFit(
        settings,
        list(data.candidates),
        list(data.judges),
        data.levels,
        {k: v for k, v in samples.items() if k in ("expected", "pi_bar", "theta", "rho", "omega", "beta_max", "tau")},
        rhat,
        ess,
        divergences,
        seconds,
        chain_report(samples, energy),
        warnings,
        labelled=0 if labels is None else int((labels > 0).sum()),
    )
    if settings.chains >= 2:
        ranking = rhat.get("ranking", 1.0)
        if ranking > RHAT_LIMIT:
            modes = ", ".join(
                f"chain {c['chain']}: Spearman {c['spearman_vs_pooled']:+.2f} with the pooled ranking"
                + (f", ω ≈ {c['omega']:.2f}" if "omega" in c else "")
                for c in fit.chains
            )
            fit.warnings.append(
                f"R-hat of the ranking (standardised expected scores) is {ranking:.3f} > {RHAT_LIMIT}: the chains "
                f"disagree on the ranking ({modes}). Run more warm-up/draws, or — when the chains sit at "
                "different ω — compare fixed ω values with --sweep rather than trusting the pooled draws"
            )
        level = max((rhat[k] for k in rhat if k != "ranking"), default=1.0)
        if level > RHAT_LIMIT and ranking <= RHAT_LIMIT:
            fit.warnings.append(
                f"max R-hat {level:.3f} > {RHAT_LIMIT} outside the ranked quantity: the absolute level "
                "and spread of the latent scale are weakly identified (simplex paper, Theorem 2); the "
                f"ranking's R-hat is {ranking:.3f}, read the ranking, not the absolute expected scores"
            )
    if divergences:
        fit.warnings.append(
            f"{divergences} divergent transitions: the posterior has regions the sampler could not explore; treat intervals with care"
        )
    if ess.get("ranking", math.inf) < 100 * settings.chains / 4:
        fit.warnings.append(f"effective sample size of the ranking (standardised expected scores) is only {ess['ranking']:.0f}")
    return fit


def fallback_settings(settings: SimplexSettings) -> SimplexSettings | None:
    """The fit to fall back to when ``settings`` do not converge: constancy (ω = 0) at a fixed β_max
    with the paper's count likelihood — the model with the fewest weakly identified directions
    (no random effects, no hyperprior), whose chains mix on every data set measured
    (benchmarks/RESULTS.md). None when ``settings`` are that fit already."""
    weight = settings.count_weight if settings.likelihood == "counts" else None  # an answers weight means nothing for counts
    beta = 5.0 if settings.beta_max is None else settings.beta_max
    simpler = replace(settings, omega=0.0, beta_max=beta, likelihood="counts", count_weight=weight)
    return None if simpler == settings else simpler


def fit_or_fallback(
    data: ScoreData, settings: SimplexSettings = SimplexSettings(), *, labels: np.ndarray | None = None, progress: bool = False
) -> SimplexFit:
    """:func:`fit_simplex`, and when its chains disagree on the ranking (R-hat > 1.01), the
    :func:`fallback_settings` fit instead — so a user gets a valid ranking and is told which model
    it comes from. The fallback's ``fallback_from`` and first warning say what
    was asked, its R-hat, and that constancy is assumed (its intervals are narrower than the
    random-effects fit's: on SummEval they covered 0.875 of the expert ranks against 0.938).
    When the fallback does not converge either, the requested fit is returned as it is (NOT
    CONVERGED), with the fallback's R-hat among its warnings."""
    fit = fit_simplex(data, settings, labels=labels, progress=progress)
    simpler = fallback_settings(settings)
    if fit.converged or settings.chains < 2 or simpler is None:
        return fit
    requested = fit.rhat.get("ranking", math.nan)
    alt = fit_simplex(data, simpler, labels=labels, progress=progress)
    if not alt.converged:
        fit.warnings.append(
            f"the fallback fit ({simpler.label()}) did not converge either (R-hat of the ranking {alt.rhat.get('ranking', math.nan):.3f})"
        )
        return fit
    alt.fallback_from = {"label": fit.settings.label(), "rhat_ranking": requested, "chains": fit.chains}
    alt.warnings.insert(
        0,
        f"the requested fit ({fit.settings.label()}) did not converge (R-hat of the ranking {requested:.3f} > {RHAT_LIMIT}); "
        f"these results are the fallback fit ({simpler.label()}), whose chains agree. It assumes constancy (no random "
        "effects for biases the judges share), so its intervals are narrower; run with --sweep to see how much the "
        "ranking depends on ω and β_max",
    )
    alt.seconds += fit.seconds
    return alt
