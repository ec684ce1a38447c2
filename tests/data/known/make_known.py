"""Writes ``known_answers.json``: cases for RAEE's closed forms, the leaderboard allocation and a
board's placement, each with the answer computed here *without the package* — from the paper's
formulas with scipy.stats' Beta quantiles, plain means of additive tables, and hand-derived claims —
so that ``tests/raee/test_known_answers.py`` checks the package against something it did not compute
(choix's known-answer cases are the model). Run from the repository root:

    python tests/data/known/make_known.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from scipy.stats import beta

GAMMA = 400.0 / math.log(10.0)  # Elo points per logit (RAEE, Algorithm 1)


def raee_case(wins: float, ties: float, losses: float, level: float, population: int | None) -> dict:
    """RAEE Eq. (2)–(4): the Jeffreys posterior Beta(W + T/2 + ½, L + T/2 + ½), its mean and
    equal-tailed interval, the Elo map, the posterior sd with the finite-population correction."""
    n = wins + ties + losses
    a, b = wins + ties / 2 + 0.5, losses + ties / 2 + 0.5
    dist = beta(a, b)
    p_bar = a / (a + b)
    low, high = dist.ppf((1 - level) / 2), dist.ppf((1 + level) / 2)
    se = dist.std() * (math.sqrt((population - n) / (population - 1)) if population else 1.0)
    to_elo = lambda p: GAMMA * math.log(p / (1 - p))  # noqa: E731
    return {
        "input": {"total": wins + ties / 2, "n": n, "level": level, "population": population},
        "expected": {
            "p_hat": (wins + ties / 2) / n,
            "p_bar": p_bar,
            "p_low": low,
            "p_high": high,
            "elo": to_elo(p_bar),
            "elo_low": to_elo(low),
            "elo_high": to_elo(high),
            "se_p": se,
            "se_elo": GAMMA * se / (p_bar * (1 - p_bar)),
        },
    }


def lockstep_table(seed: int, models: int, prompts: int, judged: int) -> dict:
    """A leaderboard judged in lockstep (every model on the same first ``judged`` prompts, the rest
    unjudged): the difficulty correction moves no model — each one's win rate is its plain mean
    over those prompts, whatever the prompts' difficulties (a complete table when ``judged`` =
    ``prompts``)."""
    rng = np.random.default_rng(seed)
    y = np.clip(
        rng.uniform(0.3, 0.6, models)[:, None] + rng.uniform(-0.2, 0.2, prompts)[None, :] + rng.normal(0, 0.1, (models, prompts)), 0, 1
    )
    y[:, judged:] = np.nan
    return {
        "input": {"y": [[None if np.isnan(v) else float(v) for v in row] for row in y]},
        "expected": {"estimate": [float(np.mean(row[:judged])) for row in y]},
    }


def neighbour_case() -> dict:
    """Three candidates 10 and 1 points apart with standard errors of 1 point each: at z = 2 the
    top pair is ordered (gap 0.10 > 2·√2·0.01 = 0.028), the lower one is open, and with a resolution
    of 5 points tied (0.01 + 0.028 ≤ 0.05)."""
    return {
        "input": {"estimate": [0.60, 0.50, 0.49], "variance": [1e-4, 1e-4, 1e-4], "z": 2.0},
        "expected": {"claims": [[0, 1, "ordered"], [1, 2, "open"]], "claims_with_resolution_0.05": [[0, 1, "ordered"], [1, 2, "tied"]]},
    }


def placement_case(seed: int) -> dict:
    """A candidate judged on every prompt of a board: its placement is its own plain win rate, a point."""
    rng = np.random.default_rng(seed)
    board = rng.random((6, 30)) < np.linspace(0.2, 0.8, 6)[:, None]
    own = (rng.random(30) < 0.55).astype(float)
    return {
        "input": {"board": board.astype(float).tolist(), "outcomes": own.tolist()},
        "expected": {"win_rate": float(own.mean()), "low": float(own.mean()), "high": float(own.mean())},
    }


def main() -> None:
    cases = {
        "raee": [
            raee_case(7, 2, 3, 0.95, None),
            raee_case(0, 0, 10, 0.95, None),
            raee_case(40, 10, 50, 0.9, 805),
            raee_case(1, 0, 0, 0.95, None),
            raee_case(120, 30, 50, 0.99, 400),
        ],
        "leaderboard_state": [lockstep_table(1, 5, 12, 12), lockstep_table(2, 8, 20, 7)],
        "neighbour_claims": [neighbour_case()],
        "placement": [placement_case(3)],
    }
    out = Path(__file__).with_name("known_answers.json")
    out.write_text(json.dumps(cases, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
