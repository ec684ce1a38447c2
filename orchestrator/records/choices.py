"""The names a config may give for a selection strategy and a PoE expert, parsed without the PoE
stack (torch): loading and checking a config, or refusing a bad one, stays fast. The PoE layer
builds its objects from these parses (:func:`orchestrator.poe.get_expert`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["EXPERT_NAMES", "STRATEGIES", "Strategy", "parse_expert_name", "parse_strategy"]

STRATEGIES = ("reorder", "variance", "min_uncertainty", "random", "eps:<x>", "diverse", "lookahead")
EXPERT_NAMES = ("soft_bt", "beta:<alpha>,<beta>", "ngaussian", "linear")


@dataclass(frozen=True)
class Strategy:
    """A parsed selection strategy."""

    name: str
    """One of ``reorder``, ``variance``, ``min_uncertainty``, ``random``, ``eps``, ``diverse``, ``lookahead``."""
    eps: float = 2.0
    """Exponent for the ε-family (PoE Eq. 6); 2 for ``reorder``, ``diverse`` and ``lookahead``."""

    def __str__(self) -> str:
        return f"eps:{self.eps:g}" if self.name == "eps" else self.name


def parse_strategy(text: str) -> Strategy:
    """Parse ``reorder|variance|min_uncertainty|random|diverse|lookahead|eps:<x>``.

    Raises:
        ValueError: unknown name or a non-numeric ε.
    """
    key = text.strip().lower()
    if key in ("reorder", "diverse", "lookahead"):
        return Strategy(key, 2.0)
    if key in ("variance", "min_uncertainty", "random"):
        return Strategy(key, 0.0)
    if key.startswith("eps:"):
        try:
            eps = float(key[4:])
        except ValueError:
            raise ValueError(f"strategy {text!r}: ε must be a number, e.g. eps:0.5") from None
        if not math.isfinite(eps) or eps < 0:
            raise ValueError(f"strategy {text!r}: ε must be finite and >= 0")
        return Strategy("eps", eps)
    raise ValueError(f"unknown strategy {text!r}; choose one of {', '.join(STRATEGIES)}")


def parse_expert_name(name: str) -> tuple[str, tuple[float, ...]]:
    """``(kind, parameters)`` of an expert name: ``("soft_bt", ())``, ``("ngaussian", ())``,
    ``("linear", ())`` or ``("beta", (alpha, beta))`` with finite ``alpha, beta >= 0``.

    Raises:
        ValueError: the name is unknown or its parameters do not parse.
    """
    key = name.strip().lower()
    if key in ("soft_bt", "bt", "sigma_beta"):
        return "soft_bt", ()
    if key in ("ngaussian", "phi_gaussian"):
        return "ngaussian", ()
    if key in ("linear", "linear_gaussian"):
        return "linear", ()
    if key.startswith("beta:"):
        try:
            alpha, beta = (float(x) for x in key[5:].split(","))
        except ValueError:
            raise ValueError(f"expert {name!r}: expected beta:<alpha>,<beta>, e.g. beta:0.5,0.5") from None
        if not (math.isfinite(alpha) and math.isfinite(beta) and alpha >= 0 and beta >= 0):
            raise ValueError(f"expert {name!r}: alpha and beta must be finite numbers >= 0, e.g. beta:0.5,0.5")
        return "beta", (alpha, beta)
    raise ValueError(f"unknown expert {name!r}; choose one of {', '.join(EXPERT_NAMES)}")
