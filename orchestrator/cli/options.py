"""The options of ``run`` and ``replay``, declared once as annotated types (each command's
signature then reads as a list of its settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import existing, file_option, number_option

RunConfigPath = Annotated[Path, typer.Argument(help="Run config (TOML).", callback=existing("config file"))]

RunDryRun = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the estimated calls, tokens and cost, and each judge's answer to one real request per template."),
]

RunOffline = Annotated[bool, typer.Option("--offline", help="With --dry-run: send nothing (no smoke call).")]

RunRunsDir = Annotated[Optional[Path], typer.Option("--runs-dir", help="Override the config's runs_dir.")]

RunFromLog = Annotated[
    Optional[Path],
    typer.Option(
        "--from-log", help="Answer every request from this judgment log (e.g. an export) instead of the judges: same engine, no network."
    ),
]

RunAnswersFrom = Annotated[
    Optional[Path],
    typer.Option(
        "--answers-from",
        help="Answer the candidate models' generation requests from this file (JSONL prompt_id, candidate, text) instead of the models.",
    ),
]

CompareFromLog = Annotated[
    Optional[Path],
    typer.Option(
        "--from-log", help="Answer every request from this judgment log instead of the judges: the same gate on recorded judgments."
    ),
]

RunReport = Annotated[
    bool, typer.Option("--report/--no-report", help="Write the HTML report beside the run file (runs/<name>.html) at the end.")
]

RunCache = Annotated[
    Optional[Path],
    typer.Option("--cache", help="Judgment cache file shared by runs (default: $ORCHESTRATOR_JUDGMENT_CACHE or the user cache directory)."),
]

RunNoCache = Annotated[bool, typer.Option("--no-cache", help="Ask every request of the judges, neither reading nor filling the cache.")]

RunPilot = Annotated[
    Optional[int],
    typer.Option("--pilot", help="Stop after this many calls and forecast the whole run's calls, tokens and USD; `resume` goes on."),
]

ReplayLog = Annotated[Path, typer.Argument(help="Judgment-log JSONL (one judgment per line).", callback=existing("file"))]

ReplayResponses = Annotated[
    Optional[Path],
    typer.Option("--responses", help="responses.jsonl: human scores (with --truth) and the answers' texts (--control length/style)."),
]

ReplayTruth = Annotated[
    Optional[str], typer.Option("--truth", help="Field of 'human' holding the ground truth (needs --responses; omit it to only rank).")
]

ReplayStrategy = Annotated[
    str, typer.Option("--strategy", help="lookahead | reorder | variance | min_uncertainty | random | eps:<x> | diverse")
]

ReplayScope = Annotated[str, typer.Option("--scope", help="per_prompt | global | items")]

ReplayExpert = Annotated[str, typer.Option("--expert", help="soft_bt | beta:<a>,<b> | ngaussian | linear")]

ReplayDebias = Annotated[str, typer.Option("--debias", help="none | permutation | home")]

ReplayBatch = Annotated[int, typer.Option("--batch", help="Comparisons selected per posterior update.")]

ReplaySeeds = Annotated[int, typer.Option("--seeds", help="Number of seeds to average (tie-breaks, random).")]

ReplaySeed = Annotated[int, typer.Option("--seed", help="First seed (a run's seed replays the run's choices).")]

ReplayBudget = Annotated[Optional[int], typer.Option("--budget", help="Judge calls per group (default: all logged).")]

ReplayJudge = Annotated[Optional[str], typer.Option("--judge", help="Only use judgments by this judge.")]

ReplayWithAbsolute = Annotated[
    bool, typer.Option("--with-absolute", help="Warm start with one absolute judgment per candidate (combined PoE).")
]

ReplayReliability = Annotated[
    bool, typer.Option("--reliability/--no-reliability", help="Per-judge reliability, as a run's model.judge_reliability (default on).")
]

ReplayPanel = Annotated[str, typer.Option("--panel", help="cost_aware | all: which judges a selected comparison is asked of.")]

ReplayPosterior = Annotated[
    str, typer.Option("--posterior", help="auto | dense | sparse: the Laplace posterior as a matrix or sparse (large N; auto: from 2,000).")
]

ReplayControl = Annotated[
    Optional[list[str]],
    typer.Option(
        "--control",
        help="length, style: fit each judge's taste with the scores (--scope global; --responses with texts); "
        "self: its preference for its own model family (--family).",
    ),
]

ReplayHuman = Annotated[
    Optional[Path],
    file_option("--human", "People's scores of some answers (JSONL, docs/human-labels.md): adds people's ranking beside the judges'."),
]

ReplayPlot = Annotated[Optional[Path], typer.Option("--plot", help="Write the Spearman curve to this PNG.")]

# --- the comparison gate's design and plan (``compare``) ---------------------------------------------

CompareRequire = Annotated[
    Optional[str],
    typer.Option(
        "--require",
        help="better (exit 0 only when better) or not-worse (equivalent and not worse pass too); default: the config's, better.",
    ),
]

CompareDesign = Annotated[
    Optional[str],
    typer.Option(
        "--design", help="anytime (valid at every look) or planned (valid at the ends of rounds, fewer prompts); default: the config's."
    ),
]

ComparePlan = Annotated[
    bool, typer.Option("--plan", help="Pay nothing: print the prompts needed for a power of 0.8 and what this budget reaches.")
]

CompareEffect = Annotated[
    Optional[float], number_option("--effect", "With --plan: the true difference beyond the margin the power is for (points; default 3).")
]

CompareSpread = Annotated[
    Optional[float], number_option("--spread", "With --plan: the outcomes' standard deviation (default: assumed 0.3).")
]

CompareSpreadFrom = Annotated[
    Optional[Path],
    file_option("--spread-from", "With --plan: measure the spread on an earlier comparison's run file (a pilot).", what="run file"),
]
