"""The goals about judges without log-probabilities and the two-system comparison gate (issues #60, #62):
part of :data:`benchmarks.goals.GOALS`, in its order."""

from __future__ import annotations

from benchmarks import readers, readers_compare, readers_verdicts
from benchmarks.goal import Goal

JUDGE_GOALS: list[Goal] = [
    Goal(
        "verdict-coverage",
        "#62",
        "judges without log-probabilities: 95% rank intervals from one verdict or k = 3 sampled verdicts per call cover the judge's own full-data ranking ≥ 0.93 at 100 and 400 calls (Qwen SummEval logs, ≥ 5 draw seeds), width stated",
        "selection.verdict_judges",
        "--seeds 8",
        "",
        readers_verdicts.verdict_coverage_figure,
        readers_verdicts.verdict_coverage_verdict,
    ),
    Goal(
        "compare-errors",
        "#60",
        "is mine better? false decisions (wrong sign, or better by ≥ margin below it) ≤ α = 0.05 looking after every prompt, ≥ 1,000 comparisons on AlpacaEval through the anchor incl. pairs within 1 point and A/A, with probabilities and with verdicts",
        "validity.compare_gate",
        "--seeds 5",
        "",
        readers.gate_errors_figure,
        readers.gate_errors_verdict,
    ),
    Goal(
        "compare-power",
        "#60",
        "is mine better? a 3-point difference decided correctly in ≥ 80% of comparisons, on average ≤ 0.6× the prompts of a fixed-size paired test with that power, at most 1.3× (simulated head-to-head judge)",
        "validity.compare_gate",
        "--seeds 5",
        "",
        readers.gate_power_figure,
        readers.gate_power_verdict,
    ),
    Goal(
        "board-claims",
        "#60",
        'a one-candidate reference campaign placed on a board with `allocation = "adaptive"` spends its budget or stops with a true claim about the board\'s models (AlpacaEval: every model in turn the newcomer on the other 36, through `orchestrator run`)',
        "leaderboards.board_claims",
        "--seeds 3",
        "",
        readers_compare.board_claims_figure,
        readers_compare.board_claims_verdict,
    ),
    Goal(
        "rank-rows-monotone",
        "#60",
        "`rank`'s rows monotone in the estimate it prints first at every stop on the 37-model board (`rank --json` of reference runs at 5–40% of the calls, `all` and `adaptive`)",
        "leaderboards.leaderboard_budget",
        "--through-product",
        "--through-product",
        readers_compare.rows_monotone_figure,
        readers_compare.rows_monotone_verdict,
        lambda argv: "--through-product" in argv,
    ),
    Goal(
        "stated-confidence",
        "#62",
        "a judge's stated confidence is never taken at face value: read through a calibration on its own repeated verdicts, the 95% rank intervals keep covering the judge's own full-data ranking ≥ 0.93 (an overconfident stating judge derived from the Qwen SummEval logs, 5 draw seeds), what face value would do stated",
        "selection.stated_confidence",
        "--seeds 5 --budgets 100,400,1200",
        "",
        readers_verdicts.stated_figure,
        readers_verdicts.stated_verdict,
    ),
    Goal(
        "verdict-alpaca",
        "#62",
        "judges without log-probabilities: one verdict per call reaches the probability judge's Spearman in ≤ 1.5× its calls on AlpacaEval's GPT-4-turbo preferences (a confident judge), the leaderboard campaign's allocation, ≥ 5 draw seeds",
        "leaderboards.verdict_alpaca",
        "--seeds 8",
        "",
        readers_verdicts.alpaca_figure,
        readers_verdicts.alpaca_verdict,
    ),
    Goal(
        "verdict-cost",
        "#62",
        "judges without log-probabilities: paid completions to reach the log-probability judge's Spearman at 100 and 200 calls, adaptive sampling ≤ 0.6× the best fixed k (Qwen SummEval logs)",
        "selection.verdict_cost",
        "--seeds 5",
        "",
        readers_verdicts.verdict_cost_figure,
        readers_verdicts.verdict_cost_verdict,
    ),
]
