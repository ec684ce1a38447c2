"""The options of ``fit raee`` and ``fit simplex`` (``--json`` and ``--family`` also ``replay``'s), declared once as annotated types (each command's
signature then reads as a list of its settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import file_option, number_option, run_argument

Run = Annotated[Optional[Path], run_argument("Run file (runs/<name>.sqlite); or give --log.")]
Log = Annotated[Optional[Path], file_option("--log", "Fit a judgment-log JSONL (an export or a foreign log) instead.")]
Judge = Annotated[Optional[list[str]], typer.Option("--judge", help="Only this judge (repeatable).")]
RaeeSoft = Annotated[bool, typer.Option("--soft", help="Soft outcomes P(win) + ½P(tie) from the logits (default: the argmax).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
RaeeLevel = Annotated[float, number_option("--level", "Credible-interval level.")]
RaeePopulation = Annotated[
    Optional[int],
    typer.Option(
        "--population", help="Prompt pool size M for the finite-population correction (a run: its prompts with an anchor; a log: none)."
    ),
]
RaeeIccThreshold = Annotated[float, number_option("--icc-threshold", "Strong judges have ICC(3,k) at least this.")]
RaeeAbstainSd = Annotated[Optional[float], number_option("--abstain-sd", "Drop items whose outcome SD across runs exceeds this.")]
RaeePoolAll = Annotated[
    bool,
    typer.Option("--pool-all", help="Pool every judge (ρ from between-judge correlation) when there are no repeated runs to screen them."),
]
RaeePlot = Annotated[Optional[Path], typer.Option("--plot", help="Write leaderboard PNGs (one per anchor) to this directory.")]
RaeeSeCurvePng = Annotated[
    Optional[Path],
    typer.Option("--se-curve", help="Also write the analytic-vs-empirical SE curve (subsampling each candidate's prompts) to this PNG."),
]
RaeeControl = Annotated[
    Optional[list[str]],
    typer.Option(
        "--control",
        help="Control a judge's taste: 'length' (AlpacaEval's length-controlled win rate; needs --responses), "
        "'self' (its preference for answers of its own model family; needs --family or the run's model.families).",
    ),
]
Family = Annotated[
    Optional[list[str]],
    typer.Option(
        "--family",
        metavar="NAME=FAMILY",
        help="The model family of a judge or a candidate, for --control self (repeat: every judge, and the candidates of a judge's family).",
    ),
]
RaeeResponses = Annotated[
    Optional[Path],
    file_option(
        "--responses",
        "The answers' texts ({prompt_id, candidate, text} rows, the anchor's included): flags constant, empty or copied answers; needed by --control.",
    ),
]
RaeeFlagShift = Annotated[
    Optional[float],
    number_option(
        "--flag-shift",
        "Flag a candidate whose win rate moves more than this many points (or a quarter of the way to 0 or 100) under control (default 10).",
    ),
]
RaeeHuman = Annotated[
    Optional[Path],
    file_option(
        "--human",
        "People's labels (JSONL, docs/human-labels.md): adds each candidate's people's win rate, the judge's outcomes rectified by them (PPI++).",
    ),
]
SimplexLevels = Annotated[int, typer.Option("--levels", help="Scale size M: scores are the integers 1..M.")]
SimplexOmega = Annotated[
    str,
    typer.Option(
        "--omega",
        help="Random-effect strength ω ≥ 0 (0 = constancy, no random effects; default 1: relaxed, expected magnitude ≈ 0.5) "
        "or 'prior' (integrate over ω ~ U(0.1, 8)).",
    ),
]
SimplexBetaMax = Annotated[
    str,
    typer.Option(
        "--beta-max",
        help="Judge-discrimination prior β_max ≥ 0 (default 5, the paper's base value), or 'prior' (integrate over β_max ~ U(0, 20)).",
    ),
]
SimplexCountWeight = Annotated[
    str,
    typer.Option(
        "--count-weight",
        help="Weight of each judge score in the likelihood: 'auto' (1/design effect of judges scoring the same answers) or a number in (0, 1]; 1 = the paper's model.",
    ),
]
SimplexLikelihood = Annotated[
    str,
    typer.Option(
        "--likelihood",
        help="'counts' (the paper's Eq. B.3) or 'answers' (one latent true score per answer, shared by the judges who scored it).",
    ),
]
SimplexDelta = Annotated[
    Optional[str],
    typer.Option(
        "--delta", help="Dirichlet direction of the random effects, M numbers (e.g. 1,4,10 looks for score inflation); default all ones."
    ),
]
SimplexSelfJudging = Annotated[
    Optional[str], typer.Option("--self-judging", help="Judge → its model family's candidates: 'judge=cand1,cand2;judge2=cand3'.")
]
SimplexSelfPreference = Annotated[
    str,
    typer.Option(
        "--self-preference",
        help="Self-judging scores: 'exclude' (the paper's default) or 'shift' (kept, with a fitted self-preference shift).",
    ),
]
SimplexSoft = Annotated[
    bool, typer.Option("--soft", help="Count the judges' option probabilities (fractional counts) instead of their argmax scores.")
]
SimplexSweep = Annotated[
    bool,
    typer.Option(
        "--sweep",
        help="Sensitivity analysis: ω ∈ {0,1,2,4,8} at β_max = 5 and "
        "β_max ∈ {0,1,5,10,20} at ω = 0, Spearman with the base fit (10 more fits).",
    ),
]
SimplexHuman = Annotated[
    Optional[Path],
    file_option(
        "--human",
        "Human labels JSONL (docs/human-labels.md): absolute scores on the 1..M scale, read as the true level of each labelled answer.",
    ),
]
SimplexFallback = Annotated[
    bool,
    typer.Option(
        "--fallback/--no-fallback",
        help="When the chains disagree on the ranking, refit with constancy (ω = 0) and report that fit, saying so.",
    ),
]
SimplexChains = Annotated[int, typer.Option("--chains")]
SimplexWarmup = Annotated[int, typer.Option("--warmup", help="Warm-up iterations per chain.")]
SimplexDraws = Annotated[int, typer.Option("--draws", help="Posterior draws per chain.")]
SimplexSeed = Annotated[int, typer.Option("--seed")]
SimplexResponses = Annotated[
    Optional[Path],
    typer.Option(
        "--responses", help="responses.jsonl with human scores, to compare the ranking with the truth (a run uses its own data.truth)."
    ),
]
SimplexTruth = Annotated[Optional[str], typer.Option("--truth", help="Human score field in --responses.")]
SimplexLevel = Annotated[float, number_option("--level", "Credible level of the intervals.")]
SimplexPlot = Annotated[Optional[Path], typer.Option("--plot", help="Write rank-interval, simplex (and sensitivity) PNGs here.")]
SimplexCollapse = Annotated[
    Optional[str], typer.Option("--collapse", help="Map the M levels to 3 for the simplex plot, e.g. 1,1,2,2,3 (default for M = 5).")
]
