"""What a RAEE fit is asked to do (``orchestrator fit raee``'s flags, ``api.fit_raee``'s settings):
one record, every choice checked once, here, in one line naming the field and its flag."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from ..errors import OrchestratorError
from ..records.families import parse_families

__all__ = ["RAEE_CONTROLS", "RaeeSettings"]

RAEE_CONTROLS = ("length", "self")
"""What a RAEE fit can take out of the win rates: the answers' length (AlpacaEval's length-controlled
win rates) and a judge's preference for its own model family."""


@dataclass(frozen=True)
class RaeeSettings:
    """A RAEE fit's settings. Lists are kept as tuples and ``families`` may be given as a mapping
    (``{"gpt4": "openai", ...}``) or ``(name, family)`` pairs."""

    soft: bool = False
    """Soft outcomes P(win) + ½P(tie) from the logits (default: the argmax)."""
    judges: tuple[str, ...] = ()
    """Only these judges (empty: all)."""
    level: float = 0.95
    """The intervals' confidence level."""
    population: int | None = None
    """Prompt pool size M for the finite-population correction (None: a run's own, a log's none)."""
    icc_threshold: float = 0.9
    """A judge whose ICC(3, k) over its repeats is below this is screened out of the pooled rows."""
    abstain_sd: float | None = None
    """Items whose repeats scatter more than this SD count as abstentions (None: none)."""
    pool_all: bool = False
    """Pool every judge, screened ones included."""
    control: tuple[str, ...] = ()
    """``"length"``: AlpacaEval's length-controlled win rates (needs the answers' texts); ``"self"``:
    each judge's preference for its own model family taken out (needs ``families``)."""
    flag_shift: float | None = None
    """Win-rate points a candidate may move under control before it is flagged (None: the default)."""
    families: tuple[tuple[str, str], ...] = ()
    """``(name, model family)`` of judges and candidates for ``"self"`` (a run's ``model.families``
    without it); also ``{name: family}`` or the CLI's ``"NAME=FAMILY"`` entries."""

    def __post_init__(self) -> None:
        for name in ("judges", "control"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise OrchestratorError(f"{name} must be a list of names, not the string {value!r}")
            object.__setattr__(self, name, tuple(value))
        if isinstance(self.families, Mapping):
            families = list(self.families.items())
        elif all(isinstance(item, str) for item in self.families):  # the CLI's NAME=FAMILY entries
            families = list(parse_families(list(self.families)).items())  # type: ignore[arg-type]
        else:
            families = list(self.families)
        object.__setattr__(self, "families", tuple((str(a), str(b)) for a, b in families))
        unknown = sorted(set(self.control) - set(RAEE_CONTROLS))
        if unknown:
            raise OrchestratorError(f"control (--control) {unknown[0]!r}: not a control this fit knows (known: {', '.join(RAEE_CONTROLS)})")
        if self.families and "self" not in self.control:
            raise OrchestratorError(
                "families (--family) is for control self (a judge's preference for its model family); add --control self"
            )
        if self.flag_shift is not None and not self.flag_shift > 0:
            raise OrchestratorError(f"flag_shift (--flag-shift) must be positive (got {self.flag_shift:g})")
        if self.abstain_sd is not None and not self.abstain_sd >= 0:  # an SD is never negative: it would drop every item
            raise OrchestratorError(f"abstain_sd (--abstain-sd) must be at least 0 (got {self.abstain_sd:g})")
        if self.population is not None and self.population < 1:
            raise OrchestratorError(f"population (--population) must be at least 1 (got {self.population})")
        if not 0 < self.level < 1:
            raise OrchestratorError(f"level (--level) must be in (0, 1), got {self.level}")

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> RaeeSettings:
        """Settings from keyword options, an unknown one refused in one line naming it."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise OrchestratorError(f"fit_raee: unknown setting {unknown[0]!r} (known: {', '.join(sorted(known))})")
        return cls(**options)  # type: ignore[arg-type]

    def check_source(self, *, log: bool, responses: object | None) -> None:
        """What the source must bring for these settings: a log has no texts nor model families of
        its own. Raises :class:`OrchestratorError` (one line naming the flag)."""
        if "length" in self.control and responses is None and log:
            raise OrchestratorError("--control length needs --responses FILE.jsonl (the answers' texts, the anchor's included)")
        if "self" in self.control and not self.families and log:
            raise OrchestratorError("--control self needs the model family of every judge and candidate: --family NAME=FAMILY")
