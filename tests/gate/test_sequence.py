"""The anytime-valid confidence sequence and its decision, on outcomes made here: valid at every
look, never wider, its ends where the hedged capital crosses 1/α."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.gate.sequence import GRID, TRUNCATION, confidence_sequence, decide


@pytest.mark.parametrize("kind", ["coin", "soft", "ties"])
def test_a_system_against_itself_is_never_declared_different_more_than_alpha(kind):
    """A/A: the true win rate is exactly ½; looking after every prompt, the share of runs that ever
    declare better or worse stays at α (here 0.05, 400 runs of 400 prompts, within two binomial
    standard errors)."""
    wrong = 0
    for seed in range(400):
        rng = np.random.default_rng(seed)
        x = {
            "coin": (rng.random(400) < 0.5).astype(float),
            "soft": np.clip(0.5 + rng.normal(0, 0.2, 400), 0, 1) * 0 + rng.uniform(0.2, 0.8, 400),
            "ties": rng.choice([0.0, 0.5, 1.0], 400),
        }[kind]
        wrong += decide(confidence_sequence(x, 0.05)).decision in ("better", "worse")
    assert wrong / 400 <= 0.05 + 2 * (0.05 * 0.95 / 400) ** 0.5


def test_the_interval_holds_the_mean_at_every_look_and_never_widens():
    rng = np.random.default_rng(3)
    x = (rng.random(300) < 0.6).astype(float)
    bounds = confidence_sequence(x, 0.05)
    assert np.all(np.diff(bounds.low) >= 0) and np.all(np.diff(bounds.high) <= 0)
    assert bounds.low[-1] <= 0.6 <= bounds.high[-1]


@pytest.mark.parametrize(
    "outcomes, margin, expected",
    [
        ([1.0] * 60, 0.0, "better"),
        ([0.0] * 60, 0.0, "worse"),
        ([0.5] * 400, 5.0, "equivalent"),
        ([0.5] * 400, 0.0, "not yet known"),  # no margin: equivalence is never a decision
        ([1.0, 0.0] * 5, 0.0, "not yet known"),
    ],
)
def test_decisions_on_known_outcomes(outcomes, margin, expected):
    assert decide(confidence_sequence(np.array(outcomes)), margin).decision == expected


@pytest.mark.parametrize("bad", [[1.5], [-0.1], [float("nan")]])
def test_outcomes_outside_the_unit_interval_are_refused(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        confidence_sequence(np.array(bad))


def test_the_interval_ends_are_where_the_capital_crosses_one_over_alpha():
    """The sequence's lower end, recomputed by hand: the hedged capital of a mean just below it has
    reached 1/α at some look, and of a mean just above it never has (pure Python products)."""
    rng = np.random.default_rng(11)
    x = np.clip(rng.normal(0.62, 0.2, 120), 0, 1)
    step = 1 / (GRID - 1)

    def ever_rejected(m: float, horizon: int | None) -> bool:
        mean, var, up, down = 0.5, 0.25, 1.0, 1.0
        sum_x, sum_sq = 0.0, 0.0
        for t, value in enumerate(x, start=1):
            stake = math.sqrt(2 * math.log(2 / 0.05) / (var * (t * math.log1p(t) if horizon is None else horizon)))
            up *= 1 + min(stake, TRUNCATION / max(m, 1e-12)) * (value - m)
            down *= 1 - min(stake, TRUNCATION / max(1 - m, 1e-12)) * (value - m)
            if 0.5 * up + 0.5 * down >= 1 / 0.05:
                return True
            sum_x += value
            mean = (0.5 + sum_x) / (t + 1)
            sum_sq += (value - mean) ** 2
            var = (0.25 + sum_sq) / (t + 1)
        return False

    for horizon in (None, 200):  # tight at every time, and sized for a horizon the run knows
        low = float(confidence_sequence(x, 0.05, horizon=horizon).low[-1])
        assert ever_rejected(low - 2 * step, horizon) and not ever_rejected(low + 2 * step, horizon)


def test_the_package_index_names_each_function_where_it_is_defined_and_loads_it_on_first_use():
    import importlib
    import subprocess
    import sys

    import orchestrator.gate as gate

    for name in gate.__all__:
        module = importlib.import_module(f"orchestrator.gate.{gate._SOURCES[name]}")
        assert getattr(gate, name) is getattr(module, name)
    with pytest.raises(AttributeError):
        gate.not_a_name  # noqa: B018
    code = "import sys, orchestrator.gate as g; g.decide; print('scipy.stats' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
