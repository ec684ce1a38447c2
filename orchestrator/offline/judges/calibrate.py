"""``orchestrator calibrate RUN | --log LOG --responses R --truth FIELD``: each judge's temperature
against reference scores (PoE App. B), its ECE before and after, and a reliability diagram."""

from __future__ import annotations

from pathlib import Path

from ...errors import OrchestratorError
from ...records.config import RunConfig
from ...records.log import load_log, load_responses
from ...run.calibration import Calibration, calibrate
from ...store import JudgmentRecord, open_run

__all__ = ["calibrate_source", "format_calibration", "plot_calibration"]


def calibrate_source(run: str | Path | None, log: str | Path | None, responses: str | Path | None, truth: str | None) -> list[Calibration]:
    """Calibrations of every judge of a run file (truth: ``--truth`` or the run's ``data.truth``)
    or of a log (``responses`` and ``truth`` needed).

    Raises:
        OrchestratorError: no truth field, or no judge with enough labelled comparisons.
    """
    if log is not None:
        if responses is None or truth is None:
            raise OrchestratorError("--log needs --responses FILE.jsonl and --truth FIELD (the reference scores)")
        rows = [
            JudgmentRecord(
                key=f"line:{n}",
                judge=r.judge,
                kind=r.kind,
                prompt_id=r.prompt_id,
                candidates=list(r.candidates),
                p_first=r.prob_first() if r.kind == "pairwise" else None,
            )
            for n, r in load_log(log)
        ]
        scores = {(r.prompt_id, r.candidate): float(v) for _, r in load_responses(responses) for v in [r.human.get(truth)] if v is not None}
        source = str(log)
    else:
        assert run is not None
        with open_run(run, write=False) as store:
            config = RunConfig.from_stored(store.config)
            dataset = store.dataset()
            rows = list(store.judgments())
        truth = truth or config.data.truth
        if not truth:
            raise OrchestratorError(f"{run}: the run has no data.truth; give --truth FIELD (a reference score of its responses)")
        scores = {
            (p, c): float(v) for p, by in dataset.responses.items() for c, r in by.items() for v in [r.human.get(truth)] if v is not None
        }
        source = str(run)
    if not scores:
        raise OrchestratorError(f"{source}: no response has a {truth!r} score")
    found = calibrate(rows, scores)
    if not found:
        raise OrchestratorError(f"{source}: no judge has 5 pairwise judgments whose candidates the {truth!r} scores tell apart")
    return found


def format_calibration(calibrations: list[Calibration]) -> str:
    lines = [f"{'judge':32} {'n':>6} {'T':>7} {'ECE':>7} {'ECE after':>10}"]
    for c in calibrations:
        edge = "  (edge of the searched 0.05–20: its confidence hardly predicts being right)" if c.temperature >= 19.9 else ""
        edge = "  (edge of the searched 0.05–20: it is right far more often than it says)" if c.temperature <= 0.051 else edge
        lines.append(f"{c.judge[:32]:32} {c.n:6d} {c.temperature:7.3f} {c.ece:7.3f} {c.ece_after:10.3f}{edge}")
    lines.append(
        "T: the temperature that fits P(first better) to the reference scores best (log-loss); apply it with\n"
        "[model.temperature] in a run config, e.g.  " + "  ".join(f'"{c.judge}" = {c.temperature:.3g}' for c in calibrations[:3])
    )
    return "\n".join(lines)


def plot_calibration(calibrations: list[Calibration], path: str | Path, *, inputs: list) -> Path:
    """Reliability diagrams, one panel per judge, before and after the temperature."""
    from ..plotting import pyplot, save

    plt = pyplot()
    n = len(calibrations)
    fig, axes = plt.subplots(1, n, figsize=(4 * n, 4), squeeze=False)
    for ax, c in zip(axes[0], calibrations):
        ax.plot([0.5, 1.0], [0.5, 1.0], color="#999", linestyle="--", label="perfect")
        for bins, label in ((c.bins, f"as judged (ECE {c.ece:.3f})"), (c.bins_after, f"T = {c.temperature:.2f} (ECE {c.ece_after:.3f})")):
            ax.plot([b[0] for b in bins], [b[1] for b in bins], marker="o", label=label)
        ax.set_title(c.judge, fontsize=9)
        ax.set_xlabel("confidence")
        ax.set_ylabel("accuracy")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7)
    return save(fig, path, inputs=inputs)
