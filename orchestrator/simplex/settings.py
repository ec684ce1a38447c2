"""What a simplex fit is asked to do (:class:`SimplexSettings`), shared by the fit
(:mod:`.inference`) and the compiled sampler (:mod:`.sampler`) without either importing the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SimplexSettings"]


@dataclass(frozen=True)
class SimplexSettings:
    """What to fit. ``omega``/``beta_max`` None = integrated over their hyperpriors (§6.2)."""

    omega: float | None = 1.0
    beta_max: float | None = 5.0
    delta: tuple[float, ...] | None = None
    """Dirichlet direction of the random effects Z_k (App. B.2.3); default all ones."""
    self_preference: Literal["exclude", "shift"] = "exclude"
    soft: bool = False
    """Fractional counts from the judges' option probabilities (our extension) instead of argmax."""
    chains: int = 4
    """NUTS chains (split R̂ needs two or more)."""
    warmup: int = 1000
    """Adaptation steps per chain (discarded)."""
    draws: int = 1000
    """Kept draws per chain."""
    seed: int = 0
    target_accept: float = 0.95
    """NUTS's target acceptance rate (higher: smaller steps, fewer divergences)."""
    likelihood: Literal["counts", "answers"] = "counts"
    """``counts`` (the default): the paper's Eq. B.3, every judge's score with its own latent score.
    ``answers`` (our extension): each answer has one latent true score shared by every
    judge who scored it (:func:`~orchestrator.simplex.model.answer_log_likelihood`)."""
    count_weight: float | None = None
    """Every answer's (``counts``: every count's) log-likelihood is worth this much (a power
    likelihood). None (the default): 1 for ``answers``; ``1/deff`` for ``counts``, the design effect
    of judges who score the same answers (:func:`~orchestrator.simplex.data.design_effect`); 1 with
    ``counts`` is the paper's likelihood, every score an independent observation."""

    def __post_init__(self) -> None:
        """Every choice checked once, here, in one line naming the field (and the CLI option)."""
        from ..errors import OrchestratorError

        for name in ("chains", "warmup", "draws"):
            if getattr(self, name) < 1:
                raise OrchestratorError(f"{name} (--{name}) must be at least 1 (got {getattr(self, name)})")
        if not -(2**63) <= self.seed < 2**63:  # JAX's PRNG key takes a 64-bit integer
            raise OrchestratorError(f"seed (--seed) must be a 64-bit integer (got {self.seed})")
        if self.omega is not None and not 0 <= self.omega < float("inf"):
            raise OrchestratorError(f"omega (--omega) must be ≥ 0 (got {self.omega:g})")
        if self.beta_max is not None and not 0 <= self.beta_max < float("inf"):
            raise OrchestratorError(f"beta_max (--beta-max) must be ≥ 0 (got {self.beta_max:g})")
        if self.count_weight is not None and not (0 < self.count_weight <= 1):
            raise OrchestratorError(f"count_weight (--count-weight) must be in (0, 1] (got {self.count_weight:g})")
        if self.delta is not None and (not self.delta or min(self.delta) <= 0):
            raise OrchestratorError(f"delta (--delta) needs positive numbers, one per level (got {list(self.delta)})")
        if self.self_preference not in ("exclude", "shift"):
            raise OrchestratorError(f"self_preference (--self-preference) must be 'exclude' or 'shift' (got {self.self_preference!r})")
        if self.likelihood not in ("counts", "answers"):
            raise OrchestratorError(f"likelihood (--likelihood) must be 'counts' or 'answers' (got {self.likelihood!r})")

    def label(self) -> str:
        om = "ω ~ U(0.1, 8)" if self.omega is None else (f"ω = {self.omega:g}" + (" (no random effects)" if self.omega == 0 else ""))
        be = "β_max ~ U(0, 20)" if self.beta_max is None else f"β_max = {self.beta_max:g}"
        if self.likelihood == "answers":
            weight = "" if self.count_weight is None or self.count_weight == 1.0 else f", answers × {self.count_weight:.2f}"
            return f"{om}, {be}, one true score per answer{weight}"
        weight = (
            ""
            if self.count_weight is None or self.count_weight == 1.0
            else f", counts × {self.count_weight:.2f} (design effect {1 / self.count_weight:.2f})"
        )
        return f"{om}, {be}, the paper's count likelihood{weight}"
