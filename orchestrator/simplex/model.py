"""The Bayesian latent-class model of the simplex paper (§5, App. B) as a numpyro model.

Data: counts ``n[j, k, s]`` of judge ``j`` assigning level ``s`` to candidate ``k``'s answers.
Likelihood (Eq. B.3), the true score marginalised:

    log p(n | π, θ) = Σ_{j,k,s} n[j,k,s] · log Σ_m π^{(j)}_{k,m} θ^{(j)}_{m,s}

or, with ``likelihood="answers"`` (our extension), one latent true score per answer
shared by its judges (:func:`answer_log_likelihood`).

Priors:

- ``π̄_k ~ Dirichlet(1, …, 1)``: candidate k's prevalence of true scores; its expected true score
  ``Σ_m m·π̄_{k,m}`` is what the candidates are ranked by (§3).
- Judges: the weight-propagation prior of :mod:`orchestrator.simplex.prior` (§5.3, App. B.3).
- Random effects for constancy violations (§5.2, Eqs. B.4–B.7):
  ``π^{(j)}_k = (1 − W_k R_j) π̄_k + W_k R_j Z_k``, ``Z_k ~ Dir(δ)``, ``R_j ~ Beta(ωJ, J)``,
  ``W_k ~ Beta(ωK, K)``; ``ω = 0`` switches them off (``π^{(j)}_k = π̄_k``).
- Hyperpriors for the integrated fit (§6.2; the paper does not print them; the default fit fixes
  ω = 1 and β_max = 5, :mod:`.inference` says why): ``ω ~ Uniform(0.1, 8)``
  — the sensitivity range; its lower end is 0.1 rather than 0 because ``Beta(ωJ, J)`` degenerates
  as ω → 0 (a funnel the sampler cannot cross; ω = 0 itself is the fixed fit) — and
  ``β_max ~ Uniform(0, 20)``.
- Human labels (the paper's future work, "a small set of gold labels"): an answer a person
  scored has a known true level m*. Its judges' scores then contribute ``log θ'_{j,k}[m*, s]``
  instead of the marginal, and the label itself ``log π̄_{k,m*}`` — so the labels inform both the
  candidates' prevalences and the judges' confusion matrices. Labels enter at weight 1 (people's
  labels of distinct answers are independent observations); the judges' terms keep the count weight.
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
from jax.scipy.special import logsumexp

from .prior import confusion_matrix, edge_concentrations

__all__ = ["make_model", "answer_log_likelihood", "OMEGA_RANGE", "BETA_RANGE"]

OMEGA_RANGE = (0.1, 8.0)
BETA_RANGE = (0.0, 20.0)


def make_model(
    levels: int,
    *,
    omega_mode: Literal["off", "fixed", "prior"],
    beta_mode: Literal["fixed", "prior"],
    shift: bool,
    likelihood: Literal["counts", "answers"],
):
    """A numpyro model ``model(scores, self_mask, omega, beta_max, delta, weight, labelled, labels)``
    of the given structure: ``scores`` are counts ``(J, K, M)`` of the unlabelled answers for the
    ``"counts"`` likelihood (Eq. B.3) or per-answer counts ``(J, K, Q, M)`` for ``"answers"``
    (:func:`answer_log_likelihood`); every answer's (or count's) log-likelihood is multiplied by
    ``weight`` (a power likelihood; 1 = none). Human labels (module docstring): for ``counts``,
    ``labelled (J, K, M, M)`` counts judge j's scores s of candidate k's answers whose label is m and
    ``labels (K, M)`` the labels; for ``answers``, ``labels (K, Q, M)`` is each answer's one-hot label
    (all ones where unlabelled) and ``labelled`` is unused. Zeros (counts) or ones (answers) = no labels.

    The structure (random effects on/off, hyperpriors or fixed values, self-preference shift,
    likelihood) is fixed here; the numbers are arguments, so one compiled sampler serves a whole
    sensitivity sweep.
    """

    def model(scores, self_mask, omega, beta_max, delta, weight, labelled, labels):
        n_judges, n_cands = scores.shape[:2]
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
        # what judge j assigns to candidate k's answer of true level m: θ_j, mixed with the
        # candidate's random-effect draw Z_k where constancy is relaxed (Eqs. B.4–B.7)
        seen = jnp.broadcast_to(theta[:, None], (n_judges, n_cands, levels, levels))
        if omega_mode != "off":
            z = numpyro.sample("Z", dist.Dirichlet(jnp.broadcast_to(delta, (n_cands, levels))).to_event(1))
            r = numpyro.sample("R", dist.Beta(omega * n_judges, n_judges * jnp.ones(n_judges)).to_event(1))
            w = numpyro.sample("W", dist.Beta(omega * n_cands, n_cands * jnp.ones(n_cands)).to_event(1))
            mix = (r[:, None] * w[None, :])[..., None, None]  # (J, K, 1, 1)
            from_z = jnp.einsum("km,jms->jks", z, theta)[:, :, None, :]  # (J, K, 1, M)
            seen = (1.0 - mix) * seen + mix * from_z
        if shift:
            tau = numpyro.sample("tau", dist.Beta(1.0, 1.0).expand([n_judges]).to_event(1))
            up = jnp.concatenate([jnp.zeros_like(seen[..., :1]), seen[..., :-1]], axis=-1)
            up = up.at[..., -1].add(seen[..., -1])
            shifted = (1.0 - tau[:, None, None, None]) * seen + tau[:, None, None, None] * up
            seen = jnp.where(self_mask[..., None, None], shifted, seen)
        log_seen = jnp.log(jnp.clip(seen, 1e-30))
        log_pi_bar = jnp.log(jnp.clip(pi_bar, 1e-30))
        if likelihood == "answers":
            total = answer_log_likelihood(scores, log_pi_bar, log_seen, labels)
            numpyro.factor("likelihood", weight * total)
        else:
            gamma = jnp.einsum("km,jkms->jks", pi_bar, seen)  # what each judge sees of each candidate
            judged = jnp.sum(scores * jnp.log(jnp.clip(gamma, 1e-30))) + jnp.sum(labelled * log_seen)
            numpyro.factor("likelihood", weight * judged + jnp.sum(labels * log_pi_bar))
        numpyro.deterministic("expected", pi_bar @ jnp.arange(1.0, levels + 1.0))

    return model


def answer_log_likelihood(item_counts, log_pi_bar, log_seen, labels=None):
    """Σ over answers of ``log Σ_m π̄_{k,m} Π_j Π_s θ'_{j,k}[m, s]^{n[j,k,q,s]}``: one true score per
    answer, shared by every judge who scored it (our extension).

    Eq. B.3 gives each judge's score its own latent true score, as if judges scored independent
    answers; judges who score the same answer see the same answer. Sharing the latent score keeps
    each judge's marginal distribution ``Σ_m π̄_{k,m} θ'_{j,k}[m, ·]`` exactly the paper's (random
    effects and self-preference shift included) and changes only the joint: agreement between
    judges on an answer is explained by the answer, not counted as independent evidence. With one
    judge per answer it is Eq. B.3. An answer nobody scored adds ``log Σ_m π̄_{k,m} = 0``.

    An answer a person labelled m* keeps only its ``m = m*`` term (``labels`` one-hot there).

    Args:
        item_counts: ``(J, K, Q, M)`` scores per judge, candidate, question and level.
        log_pi_bar: ``(K, M)``. log_seen: ``(J, K, M, M)`` log confusion (true level → assigned).
        labels: ``(K, Q, M)`` one-hot human labels, all ones where unlabelled; None = no labels.
    """
    per_level = jnp.einsum("jkqs,jkms->kqm", item_counts, log_seen) + log_pi_bar[:, None, :]
    if labels is not None:
        per_level = jnp.where(labels > 0, per_level, -jnp.inf)
    return jnp.sum(logsumexp(per_level, axis=-1))
