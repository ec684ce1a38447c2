"""The Bayesian latent-class model of the simplex paper (§5, App. B) as a numpyro model.

Data: counts ``n[j, k, s]`` of judge ``j`` assigning level ``s`` to candidate ``k``'s answers.
Likelihood (Eq. B.3), the true score marginalised:

    log p(n | π, θ) = Σ_{j,k,s} n[j,k,s] · log Σ_m π^{(j)}_{k,m} θ^{(j)}_{m,s}

Priors:

- ``π̄_k ~ Dirichlet(1, …, 1)``: candidate k's prevalence of true scores; its expected true score
  ``Σ_m m·π̄_{k,m}`` is what the candidates are ranked by (§3).
- Judges: the weight-propagation prior of :mod:`orchestrator.simplex.prior` (§5.3, App. B.3).
- Random effects for constancy violations (§5.2, Eqs. B.4–B.7):
  ``π^{(j)}_k = (1 − W_k R_j) π̄_k + W_k R_j Z_k``, ``Z_k ~ Dir(δ)``, ``R_j ~ Beta(ωJ, J)``,
  ``W_k ~ Beta(ωK, K)``; ``ω = 0`` switches them off (``π^{(j)}_k = π̄_k``).
- Hyperpriors for the integrated fit (§6.2; the paper does not print them): ``ω ~ Uniform(0.1, 8)``
  — the sensitivity range; its lower end is 0.1 rather than 0 because ``Beta(ωJ, J)`` degenerates
  as ω → 0 (a funnel the sampler cannot cross; ω = 0 itself is the fixed fit) — and
  ``β_max ~ Uniform(0, 20)``.
- Self-judging (App. E.3): excluded from the counts by the caller, or kept with a self-preference
  shift: on self-judging pairs the assigned score moves one level up with probability
  ``τ_j ~ Beta(1, 1)`` (``γ ← γ·((1 − τ_j) I + τ_j S)``, ``S`` the one-step-up map), the form in
  which the paper injected the bias it then corrected.
"""

from __future__ import annotations

from typing import Literal

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from .prior import confusion_matrix, edge_concentrations

__all__ = ["make_model", "OMEGA_RANGE", "BETA_RANGE"]

OMEGA_RANGE = (0.1, 8.0)
BETA_RANGE = (0.0, 20.0)


def make_model(levels: int, *, omega_mode: Literal["off", "fixed", "prior"], beta_mode: Literal["fixed", "prior"], shift: bool):
    """A numpyro model ``model(counts, self_mask, omega, beta_max, delta)`` of the given structure.

    The structure (random effects on/off, hyperpriors or fixed values, self-preference shift) is
    fixed here; the numbers are arguments, so one compiled sampler serves a whole sensitivity sweep.
    """

    def model(counts, self_mask, omega, beta_max, delta):
        n_judges, n_cands, _ = counts.shape
        if beta_mode == "prior":
            beta_max = numpyro.sample("beta_max", dist.Uniform(*BETA_RANGE))
        if omega_mode == "prior":
            omega = numpyro.sample("omega", dist.Uniform(*OMEGA_RANGE))
        rho = numpyro.sample("rho", dist.Beta(1.0, 1.0).expand([n_judges]).to_event(1))
        root = numpyro.sample("root", dist.Dirichlet(jnp.ones((n_judges, levels))).to_event(1))
        steps = [
            numpyro.sample(f"edges{s}", dist.Dirichlet(conc).to_event(2))
            for s, conc in enumerate(edge_concentrations(levels, rho * beta_max, xp=jnp))
        ]
        theta = numpyro.deterministic("theta", confusion_matrix(root, steps, xp=jnp))  # (J, M, M)
        pi_bar = numpyro.sample("pi_bar", dist.Dirichlet(jnp.ones((n_cands, levels))).to_event(1))
        if omega_mode == "off":
            pi = jnp.broadcast_to(pi_bar[None], (n_judges, n_cands, levels))
        else:
            z = numpyro.sample("Z", dist.Dirichlet(jnp.broadcast_to(delta, (n_cands, levels))).to_event(1))
            r = numpyro.sample("R", dist.Beta(omega * n_judges, n_judges * jnp.ones(n_judges)).to_event(1))
            w = numpyro.sample("W", dist.Beta(omega * n_cands, n_cands * jnp.ones(n_cands)).to_event(1))
            mix = (r[:, None] * w[None, :])[..., None]  # (J, K, 1)
            pi = (1.0 - mix) * pi_bar[None] + mix * z[None]
        gamma = jnp.einsum("jkm,jms->jks", pi, theta)  # what each judge sees of each candidate
        if shift:
            tau = numpyro.sample("tau", dist.Beta(1.0, 1.0).expand([n_judges]).to_event(1))
            up = jnp.concatenate([jnp.zeros_like(gamma[..., :1]), gamma[..., :-1]], axis=-1)
            up = up.at[..., -1].add(gamma[..., -1])
            shifted = (1.0 - tau[:, None, None]) * gamma + tau[:, None, None] * up
            gamma = jnp.where(self_mask[..., None], shifted, gamma)
        numpyro.factor("likelihood", jnp.sum(counts * jnp.log(jnp.clip(gamma, 1e-30))))
        numpyro.deterministic("expected", pi_bar @ jnp.arange(1.0, levels + 1.0))

    return model
