"""What a replay is asked to do, as one frozen object (the option group the API, the CLI and
the benchmarks share), and its checks.

Light on purpose: nothing here imports torch until :meth:`ReplaySettings.checked` runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import OrchestratorError

if TYPE_CHECKING:
    from ...poe import PoEConfig, Strategy
    from .log_groups import Group

__all__ = ["ReplaySettings"]


@dataclass(frozen=True)
class ReplaySettings:
    """A replay's options, with a run's names (``model.*``, ``selection.*``) where a run has them."""

    strategy: Any = "lookahead"
    """A strategy name (``lookahead``, ``reorder``, ``eps:0.1``, …) or a parsed ``Strategy``."""
    scope: str = "per_prompt"
    expert: str = "soft_bt"
    debias: str = "none"
    batch: int = 1
    budget: int | None = None
    """Judge calls per group (None: everything the log can answer)."""
    seeds: int = 1
    seed: int = 0
    with_absolute: bool = False
    judge_reliability: bool = True
    panel: str = "cost_aware"
    posterior: str = "auto"
    control: tuple[str, ...] = ()
    families: tuple[tuple[str, str], ...] = ()
    """``(name, model family)`` of judges and candidates, for the ``self`` control."""

    def __post_init__(self) -> None:
        # families may be given as a person writes them, "NAME=FAMILY" (--family): read once, here
        if any(isinstance(f, str) for f in self.families):
            from ...records.families import parse_families

            object.__setattr__(self, "families", tuple(parse_families([str(f) for f in self.families]).items()))

    def checked(self, groups: list[Group]) -> tuple[Strategy, PoEConfig]:
        """The parsed strategy and the posterior's configuration.

        Raises:
            OrchestratorError: a bad strategy, expert, debias mode, batch, budget, seeds, seed,
                panel or control (one line naming the option).
        """
        from ...poe import DEBIAS_MODES, PoEConfig, get_expert, parse_strategy
        from ...poe.covariates import CONTROLS, expand_controls
        from ...records.config import MAX_BATCH

        control = list(dict.fromkeys(self.control))
        unknown = sorted(set(control) - set(CONTROLS))
        if unknown:
            raise OrchestratorError(f"--control {unknown[0]}: not a control replay knows (known: {', '.join(CONTROLS)})")
        if self.families and "self" not in control:
            raise OrchestratorError("--family is for --control self (a judge's preference for its model family); add --control self")
        if "self" in control and not self.families:
            raise OrchestratorError("--control self needs the model family of every judge and candidate: --family NAME=FAMILY")
        text = [c for c in control if c != "self"]
        if text and self.scope != "global":
            raise OrchestratorError(
                f"--control {text[0]} needs --scope global: within one prompt a candidate has one answer, "
                "so its length or style cannot be told from its quality"
            )
        if text and not all(g.texts for g in groups):
            raise OrchestratorError(f"--control {text[0]} reads the answers' texts: give --responses with each response's text")
        try:
            strategy = parse_strategy(self.strategy) if isinstance(self.strategy, str) else self.strategy
            config = PoEConfig(
                expert=get_expert(self.expert),
                home_advantage=self.debias == "home",
                judge_sharpness=self.judge_reliability,
                judge_precision=self.judge_reliability,
                posterior=self.posterior,
                controls=expand_controls(control),
                families=dict(self.families),
            )
        except ValueError as exc:
            raise OrchestratorError(str(exc)) from None
        if self.debias not in DEBIAS_MODES:
            raise OrchestratorError(f"unknown debias mode {self.debias!r}; choose one of {', '.join(DEBIAS_MODES)}")
        if self.batch < 1:
            raise OrchestratorError(f"--batch must be >= 1 (got {self.batch})")
        if self.batch > MAX_BATCH:
            raise OrchestratorError(f"--batch must be <= {MAX_BATCH:,}, what a run's selection.batch allows (got {self.batch})")
        if self.budget is not None and self.budget < 1:
            raise OrchestratorError(f"--budget must be >= 1 (got {self.budget})")
        if self.seeds < 1:
            raise OrchestratorError(f"--seeds must be >= 1 (got {self.seeds})")
        if self.panel not in ("cost_aware", "all"):
            raise OrchestratorError(f"--panel must be cost_aware or all (got {self.panel!r})")
        if not 0 <= self.seed < 2**32 - self.seeds:
            raise OrchestratorError(f"--seed must be in [0, 2^32 - seeds) (got {self.seed})")
        return strategy, config

    def callable_calls(self, group: Group) -> int:
        """The judge calls a replay of ``group`` can make (what the log answers, within the budget)."""
        logged = sum(len(entries) for entries in group.pairwise.values())
        if self.debias == "permutation":
            logged = 2 * sum(min(len(e), len(group.pairwise.get((j, i), []))) for (i, j), e in group.pairwise.items() if i < j)
        return logged if self.budget is None else min(logged, self.budget)
