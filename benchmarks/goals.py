"""Every goal the benchmarks answer: the issue it comes from, the script and arguments that measure it,
its quick form, and how its figure and verdict are read from the script's JSON records (issue #53).

A goal's figure is never typed: :func:`latest` picks the newest full (not ``--quick``) record of its
script whose arguments match, and the goal's ``figure``/``verdict`` read it. Records carried over from
the hand-written table of 2026-11-26 (``"migrated": true``) hold that table's text; a new run of the
goal's command replaces them.
"""

from __future__ import annotations

import shlex

from benchmarks import harness, readers, readers_compare
from benchmarks.goal import Goal
from benchmarks.goals_judges import JUDGE_GOALS

Record = readers.Record


def _argv(record: Record) -> list[str]:
    return shlex.split(record.get("command", ""))[3:]


def latest(goal: Goal, quick: bool = False) -> Record | None:
    """The newest record that measures ``goal``: its own script's, full runs only unless ``quick``."""
    chosen = None
    for record in harness.records(goal.script):
        if record.get("goal") not in (None, goal.key) or bool(record.get("quick")) != quick:
            continue
        if record.get("goal") is None and not goal.accepts(_argv(record)):
            continue
        chosen = record
    return chosen


GOALS: list[Goal] = [
    Goal(
        "board-placement",
        "#52",
        "a new model onto an existing board: at 100 prompts MAE ≤ 1.0 point within the board's range, never worse than random on stronger models, coverage ≥ 0.93",
        "leaderboards.board_placement",
        "--seeds 20",
        "",
        readers.board_figure,
        readers.board_verdict,
        lambda argv: "--oracle" not in argv and "--split" not in argv,  # every split: the verdict reads them all
    ),
    Goal(
        "board-oracle",
        "#52",
        "how close a board can get at all: a 2PL board with the held-out model's prompts and ability known, and predictors without a 2PL (the bound of the 1.0-point goal)",
        "leaderboards.board_placement",
        "--oracle",
        "--oracle",
        readers.oracle_figure,
        readers.oracle_verdict,
        lambda argv: "--oracle" in argv,
    ),
    Goal(
        "stopping-claims",
        "#52 item 2",
        "stopping claims that hold together: runs with any wrong claim ≤ 10%, coverage of partly judged models ≥ 0.93, at R = 2 and 3 and on the full board",
        "leaderboards.stopping_claims",
        "--seeds 20 --full",
        "",
        readers.claims_figure,
        readers.claims_verdict,
        lambda argv: "--board" not in argv,
    ),
    Goal(
        "stopping-claims-untuned",
        "#52 item 2",
        "the same stopping claims on a board they were not designed on (SummEval's experts, 15 systems × 100 articles, R = 5 and 10)",
        "leaderboards.stopping_claims",
        "--board summeval --seeds 200",
        "--board summeval",
        readers.claims_untuned_figure,
        readers.claims_untuned_verdict,
        lambda argv: "--board" in argv,
    ),
    Goal(
        "never-worse-than-cutting",
        "#52 item 3",
        "`adaptive` at least as good as the fixed subset on τ and largest error at every budget (≥ 10 seeds)",
        "leaderboards.leaderboard_budget",
        "--seeds 10",
        "",
        readers.cut_figure,
        readers.cut_verdict,
        readers.budget_main,
    ),
    *JUDGE_GOALS,
    Goal(
        "reliability-5",
        "#59",
        "the fifth reliability campaign: numbers bounded by their data (property tests over random boards), one meaning per column, inputs refused before any call, a run that outlives its board file, exports safe to open, the labelling server under a crowd of 200, damaged records one line; ≥ 40 new cases",
        "reliability.suite",
        "tests/reliability/test_bounded_numbers_and_safe_exports.py",
        "tests/reliability/test_bounded_numbers_and_safe_exports.py",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests("tests/reliability/test_bounded_numbers_and_safe_exports.py"),
    ),
    Goal(
        "reliability-4",
        "#54",
        "the fourth reliability campaign: each class fixed at its root, ≥ 40 new cases kept in the suite, readers beside a writer with zero failures",
        "reliability.suite",
        "tests/reliability/test_catalog_labels_and_boards.py tests/reliability/test_catalog_label_server_and_names.py",
        "tests/reliability/test_catalog_labels_and_boards.py tests/reliability/test_catalog_label_server_and_names.py",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests("tests/reliability/test_catalog_labels_and_boards.py", "tests/reliability/test_catalog_label_server_and_names.py"),
    ),
    Goal(
        "first-read",
        "#51",
        "the first read: a judge without information named, plain words first, tidy exports, output that survives a log, repeatable runs, `init` that runs",
        "reliability.suite",
        "tests/reliability/test_first_read.py",
        "tests/reliability/test_first_read.py",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests("tests/reliability/test_first_read.py"),
    ),
    Goal(
        "layout",
        "#29, #53",
        "the layout: no import cycle, layers one way, no module over 400 lines, every README/docs command run by the tests, every goal names a command",
        "reliability.suite",
        "tests/house/test_layout.py tests/house/test_readme.py --workers 2",
        "tests/house/test_layout.py tests/house/test_readme.py --workers 2",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests("tests/house/test_layout.py", "tests/house/test_readme.py"),
    ),
    Goal(
        "not-slower",
        "#29, #53",
        "the loop and the rebuild not slower after a redesign (ratios in one run, both trees alternating)",
        "speed.trees",
        "--base 1a3d712",
        "--base 1a3d712",
        lambda r: str(r["summary"]),
        lambda r: "met" if max(r["figures"]["ratios"].values()) <= 1.05 else "not met",
    ),
    Goal(
        "loop-overhead",
        "#4",
        "loop overhead ≤ 2 ms per judgment",
        "speed.loop_overhead",
        "",
        "",
        readers.loop_figure,
        readers.loop_verdict,
        lambda argv: "--strategy" not in argv,
    ),
    Goal(
        "rebuild",
        "#4",
        "rebuild from 100k judgments ≤ 5 s",
        "speed.rebuild",
        "",
        "",
        lambda r: f"{r['figures']['seconds']:.2f} s for {r['figures']['judgments']} judgments (refit {r['figures']['refit_s']:.2f} s)",
        readers.rebuild_verdict,
        lambda argv: "--prompts" not in argv,
    ),
    Goal(
        "leaderboard-at-20",
        "#30",
        "a leaderboard at 20% of the calls as good as cutting the benchmark to 40%",
        "leaderboards.leaderboard_budget",
        "--seeds 10",
        "",
        readers.twenty_figure,
        readers.twenty_verdict,
        readers.budget_main,
    ),
    Goal(
        "leaderboard-coverage",
        "#30",
        "leaderboard coverage of the full-data win rates ≥ 0.9",
        "leaderboards.leaderboard_budget",
        "--seeds 10",
        "",
        readers.coverage_figure,
        readers.coverage_verdict,
        readers.budget_main,
    ),
    Goal(
        "rank-speed",
        "#30 item 6",
        "`rank` of a reference run of every AlpacaEval model × 805 prompts ≤ 2 s (57 × 805 when the goal was set; 37 in the shared data)",
        "leaderboards.leaderboard_budget",
        "--through-product",
        "--through-product",
        readers.rank_speed_figure,
        readers.rank_speed_verdict,
        lambda argv: "--through-product" in argv,
    ),
    Goal(
        "reliability-3",
        "#31",
        "the third reliability campaign: ≥ 40 new cases, fuzz, earlier campaigns re-measured",
        "reliability.suite",
        "tests/reliability/test_catalog_cache_budgets_importers.py tests/reliability/test_reliability_fuzz.py tests/reliability/test_reliability_catalog.py",
        "tests/reliability/test_catalog_cache_budgets_importers.py tests/reliability/test_reliability_fuzz.py tests/reliability/test_reliability_catalog.py",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests(
            "tests/reliability/test_catalog_cache_budgets_importers.py",
            "tests/reliability/test_reliability_fuzz.py",
            "tests/reliability/test_reliability_catalog.py",
        ),
    ),
    Goal(
        "reliability-7",
        "#77",
        "the seventh reliability campaign: candidate models against endpoints that fail, hang, need keys or answer too much; run files with NULLs of every schema version; references that resolve; tests that can fail",
        "reliability.suite",
        "tests/generation/test_real_endpoints.py tests/run/test_older_run_files.py tests/house/test_dotted_references.py "
        "tests/generation/test_bundled_candidates.py tests/run/test_budget_limits.py",
        "tests/generation/test_real_endpoints.py tests/run/test_older_run_files.py tests/house/test_dotted_references.py "
        "tests/generation/test_bundled_candidates.py tests/run/test_budget_limits.py",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests(
            "tests/generation/test_real_endpoints.py",
            "tests/run/test_older_run_files.py",
            "tests/house/test_dotted_references.py",
            "tests/generation/test_bundled_candidates.py",
            "tests/run/test_budget_limits.py",
        ),
    ),
    Goal(
        "first-read-2",
        "#82",
        "the first read, second round: bundled models asked as they were trained and template-only answers refused, a not-yet-known gate that says the max_calls to set, one progress count, plain words, docs where the user is, no unclosed sessions",
        "reliability.suite",
        "tests/reliability/test_first_read_words.py tests/generation/test_prompt_formats.py tests/generation/test_client_sessions.py",
        "tests/reliability/test_first_read_words.py tests/generation/test_prompt_formats.py tests/generation/test_client_sessions.py",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests(
            "tests/reliability/test_first_read_words.py",
            "tests/generation/test_prompt_formats.py",
            "tests/generation/test_client_sessions.py",
        ),
    ),
    Goal(
        "gate-lost-prompts",
        "#77",
        "the gate never decides on the easy prompts only: a model against a copy of another that fails on the longest third of the prompts (AlpacaEval preferences, through `orchestrator compare`, a budget of every prompt), decided under the documented rule next to the truth",
        "validity.gate_lost_prompts",
        "--pairs 6",
        "",
        readers_compare.lost_figure,
        readers_compare.lost_verdict,
    ),
    Goal(
        "reliability-6",
        "#69",
        "the sixth reliability campaign: judge answers checked from every source, code named by data never imported by a reader, the gate's exits, budgets, logs, thinking and words; ≥ 40 new cases with property tests",
        "reliability.suite",
        "tests/reliability/test_judge_answers.py tests/reliability/test_provider_kills.py tests/reliability/test_code_and_data.py tests/reliability/test_gate_exits.py tests/reliability/test_logs_words_budgets.py",
        "tests/reliability/test_judge_answers.py tests/reliability/test_provider_kills.py tests/reliability/test_code_and_data.py tests/reliability/test_gate_exits.py tests/reliability/test_logs_words_budgets.py",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests(
            "tests/reliability/test_judge_answers.py",
            "tests/reliability/test_provider_kills.py",
            "tests/reliability/test_code_and_data.py",
            "tests/reliability/test_gate_exits.py",
            "tests/reliability/test_logs_words_budgets.py",
        ),
    ),
    Goal(
        "suite-time",
        "#32",
        "the whole suite ≤ 15 min on 2 cores",
        "reliability.suite",
        "--workers 3",
        "--workers 3",
        readers.tests_figure,
        readers.suite_verdict,
        lambda argv: not any(a.startswith("tests/") for a in argv) and "--workers" in argv,
    ),
    Goal(
        "alpacaeval-exact",
        "#5",
        "RAEE reproduces AlpacaEval 2.0's win rates from its own annotations to 10⁻⁶, in its order",
        "leaderboards.alpacaeval_leaderboard",
        "",
        "",
        lambda r: (
            f"{r['figures']['models']} models: largest |100·p̂ − win rate| {r['figures']['max_abs_difference']:.1e}, order reproduced: {r['figures']['same_order']}"
        ),
        lambda r: "met" if r["figures"]["max_abs_difference"] <= 1e-6 and r["figures"]["same_order"] else "not met",
    ),
    Goal(
        "length-control",
        "#33",
        "AlpacaEval LC: Spearman ≥ 0.98, max difference ≤ 2 points, NullModel flagged",
        "bias.length_control",
        "",
        "",
        lambda r: (
            f"Spearman {r['figures']['lc_spearman']:.3f} with AlpacaEval's LC column, largest difference {r['figures']['lc_max_difference']:.2f} points, NullModel flagged: {r['figures']['null_flagged']}"
        ),
        lambda r: (
            f"{sum([r['figures']['lc_spearman'] >= 0.98, r['figures']['lc_max_difference'] <= 2.0, bool(r['figures']['null_flagged'])])} of 3"
        ),
    ),
    Goal(
        "judge-taste",
        "#33",
        "a judge's length / style / self-preference recovered within ±15% on simulations",
        "bias.length_control",
        "",
        "",
        readers.taste_figure,
        readers.taste_verdict,
    ),
    Goal(
        "summeval-length",
        "#33",
        "SummEval GPT-3.5 with length control: Spearman with experts not lower, the ranking's length preference closer to the experts'",
        "bias.length_control",
        "",
        "",
        readers.summeval_figure,
        readers.summeval_verdict,
    ),
    Goal(
        "graded-verdicts",
        "#33",
        "graded five-way verdicts reach 90% of the all-pairs Spearman in fewer calls than A/B verdicts (simulation)",
        "selection.graded_verdicts",
        "--seeds 5",
        "",
        readers.carried,
        readers.carried,
        lambda argv: False,
    ),
    Goal(
        "judges-against-people",
        "#34",
        "judges against people: the table on SummEval's judges, checked by hand",
        "reliability.suite",
        "tests/judging/test_judges_board.py",
        "tests/judging/test_judges_board.py",
        readers.tests_figure,
        readers.tests_verdict,
        readers.tests("tests/judging/test_judges_board.py"),
    ),
    Goal(
        "five-percent-labels",
        "#34",
        "with 5% human labels the intervals cover the expert ranks ≥ 0.95 at ≤ 1.3× the width",
        "people.simplex_labels",
        "--seed 0",
        "",
        readers.carried,
        readers.carried,
        lambda argv: False,
    ),
    Goal(
        "selection-vs-peers",
        "#36",
        "default selection reaches self-Spearman 0.9 in ≤ 0.8× the calls of the best peer",
        "selection.peers_active",
        "--seeds 40 --budget 80 --data real --methods lookahead/permutation swiss",
        "",
        readers.carried,
        readers.carried,
        lambda argv: False,
    ),
    Goal(
        "simplex-foreign",
        "#35",
        "simplex convergence on foreign data: ranking R-hat ≤ 1.01 in ≥ 95% of ≥ 20 replicates and on SummEval, coverage ≥ 0.9, ≤ 60 s",
        "validity.simplex_foreign",
        "",
        "",
        readers.carried,
        readers.carried,
        lambda argv: False,
    ),
]


def by_key(key: str) -> Goal:
    for goal in GOALS:
        if goal.key == key:
            return goal
    raise KeyError(key)
