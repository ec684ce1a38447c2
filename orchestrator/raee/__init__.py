"""RAEE, reference-anchored Elo (RAEE paper, ``shared/papers/raee-reference-anchored-elo.txt``).

- :mod:`.estimates`: the closed forms, pure functions on arrays (Jeffreys posterior, Elo gap and
  interval, SE with the finite-population and κ corrections, ICC(3, k), pooling; Eq. 2–9);
- :mod:`.records`: the columnar reference-anchored judgments and the report's rows;
- :mod:`.tables`: per-item outcomes, between-judge correlation, leaderboards, anchor swaps;
- :mod:`.report`: :func:`raee_report`, the whole table with screening and diagnostics;
- :mod:`.allocation`: difficulty-corrected win rates and the adaptive allocation's gains;
- :mod:`.control`: length-controlled win rates, judges' length effects, degenerate candidates.

Pure: imports numpy, scipy and pydantic only — never the judging layer, the CLI or plotting.
"""

from .estimates import (
    GAMMA,
    SE_CURVE_SIZES,
    RaeeEstimate,
    cohen_kappa,
    elo,
    icc3k,
    kappa_factor,
    outcomes,
    pooled_variance,
    raee_arrays,
    raee_estimate,
    se_calibration,
    spread_se,
)
from .records import (
    MID_REGION,
    MID_REGION_TARGET,
    AnchorSwap,
    JudgeBias,
    JudgeScreen,
    RaeeReport,
    RaeeRow,
    ReferenceJudgments,
    known,
    reference_wtl,
)
from .report import raee_report
from .tables import anchor_swaps, between_judge_correlation, item_matrix, item_outcomes, leaderboard

__all__ = [
    "GAMMA",
    "MID_REGION",
    "MID_REGION_TARGET",
    "SE_CURVE_SIZES",
    "AnchorSwap",
    "JudgeBias",
    "JudgeScreen",
    "RaeeEstimate",
    "RaeeReport",
    "RaeeRow",
    "ReferenceJudgments",
    "anchor_swaps",
    "between_judge_correlation",
    "cohen_kappa",
    "elo",
    "icc3k",
    "item_matrix",
    "item_outcomes",
    "kappa_factor",
    "known",
    "leaderboard",
    "outcomes",
    "pooled_variance",
    "raee_arrays",
    "raee_estimate",
    "raee_report",
    "reference_wtl",
    "se_calibration",
    "spread_se",
]
