"""A simulator of realistic LLM judges, writing the judgment-log and responses JSONL formats.

What makes an LLM judge hard to rank with, each a parameter of :class:`SimulatedJudge`:

- **partial agreement**: the judge's notion of quality correlates with the true quality only
  at ``agreement`` (the rest is the judge's own taste, fixed per response);
- **noise**: every call adds logit noise, so asking again (or in the other order) differs;
- **over-confidence / miscalibration**: logits are multiplied by ``overconfidence`` (> 1 pushes
  probabilities towards 0 and 1, as the PoE paper's Appendix B measures for Qwen);
- **position bias**: ``position_bias`` logits in favour of the first-shown response;
- **absolute scores**: a distribution over 1..``levels`` centred on an affine map of the judge's
  latent quality, blurred and sharpened the same way.

Humans are simulated as the mean of three 1–5 ratings of the true quality (ties, like SummEval).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

__all__ = [
    "simulate_length_scores",
    "simulate_family_leaderboard",
    "simulate_shared_bias_panel",
    "JUDGE_PRESETS",
    "LengthLeaderboard",
    "SimulatedJudge",
    "judge_latent",
    "pairwise_probabilities",
    "simulate_dataset",
    "simulate_length_leaderboard",
]


@dataclass(frozen=True)
class SimulatedJudge:
    """Parameters of a simulated judge (logit units unless stated)."""

    name: str = "sim-judge"
    agreement: float = 0.8
    """Correlation of the judge's latent quality with the true quality, in [0, 1]."""
    sharpness: float = 1.5
    """Logit difference per unit of the judge's (standardised) latent quality difference."""
    noise: float = 0.7
    """Sd of per-call logit noise."""
    overconfidence: float = 1.0
    """Multiplier on the final logit; > 1 over-confident, < 1 under-confident."""
    position_bias: float = 0.0
    """Logit in favour of the first-shown response."""
    absolute_noise: float = 1.0
    """Sd (in levels) of per-call noise of the absolute score's centre."""
    levels: int = 10
    """Absolute scale 1..levels."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.agreement <= 1.0:
            raise ValueError(f"agreement must be in [0, 1], got {self.agreement}")
        if self.levels < 2:
            raise ValueError(f"levels must be >= 2, got {self.levels}")


JUDGE_PRESETS = {
    "good": SimulatedJudge("sim-good", agreement=0.9, sharpness=2.0, noise=0.5, overconfidence=1.0, position_bias=0.0),
    "llm": SimulatedJudge("sim-llm", agreement=0.7, sharpness=1.5, noise=0.8, overconfidence=2.5, position_bias=0.8),
    "weak": SimulatedJudge("sim-weak", agreement=0.4, sharpness=1.0, noise=1.2, overconfidence=3.0, position_bias=1.5),
    "qwen1.5b": SimulatedJudge("sim-qwen1.5b", agreement=0.3, sharpness=0.27, noise=0.4, overconfidence=1.0, position_bias=1.0),
}
"""A near-calibrated strong judge, a typical over-confident position-biased LLM, a weak one, and the
embedded 1.5B judge as measured on its exhaustive SummEval log (benchmarks/data: in logit units the
candidates' scores have sd 0.23–0.33, the per-call residual sd 0.33–0.45, the first-shown bonus
0.8–1.4; Spearman with the experts about 0.2)."""


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def judge_latent(quality: np.ndarray, judge: SimulatedJudge, rng: np.random.Generator) -> np.ndarray:
    """The judge's notion of quality: ``agreement·z(quality) + √(1−agreement²)·taste``."""
    z = (quality - quality.mean()) / (quality.std() + 1e-12)
    taste = rng.normal(0.0, 1.0, quality.shape[0])
    a = judge.agreement
    return a * z + math.sqrt(max(0.0, 1.0 - a * a)) * taste


def pairwise_probabilities(latent: np.ndarray, judge: SimulatedJudge, rng: np.random.Generator) -> np.ndarray:
    """``(N, N)`` matrix: entry ``[i, j]`` is the judge's P(i better) with i shown first, one
    independent noisy call per ordered pair (diagonal 0.5)."""
    n = latent.shape[0]
    logit = judge.sharpness * (latent[:, None] - latent[None, :]) + judge.noise * rng.normal(size=(n, n))
    probs = np.clip(_sigmoid(judge.overconfidence * logit + judge.position_bias), 1e-6, 1 - 1e-6)
    np.fill_diagonal(probs, 0.5)
    return probs


def simulate_dataset(
    n_prompts: int,
    n_candidates: int,
    judge: SimulatedJudge,
    *,
    seed: int = 0,
    system_sd: float = 0.7,
    item_sd: float = 0.7,
    pairwise: bool = True,
    absolute: bool = True,
    truth_field: str = "quality",
) -> tuple[list[dict], list[dict]]:
    """Simulate every ordered pair and every absolute score for ``n_prompts × n_candidates``.

    True quality of candidate c on prompt t is ``system_c + item_{t,c}`` (so candidates are also
    rankable globally). Returns ``(log_records, responses)`` as JSON-ready dicts; responses carry
    ``human[truth_field]`` and ``human["latent"]`` (the noise-free truth).
    """
    if n_prompts < 1 or n_candidates < 2:
        raise ValueError("need at least 1 prompt and 2 candidates")
    rng = np.random.default_rng(seed)
    names = [f"M{c}" for c in range(n_candidates)]
    system = rng.normal(0.0, system_sd, n_candidates)
    records: list[dict] = []
    responses: list[dict] = []
    for t in range(n_prompts):
        pid = f"p{t:04d}"
        quality = system + rng.normal(0.0, item_sd, n_candidates)
        ratings = np.clip(np.rint(3.0 + quality[:, None] + rng.normal(0.0, 0.6, (n_candidates, 3))), 1, 5)
        human = ratings.mean(1)
        latent = judge_latent(quality, judge, rng)
        for c in range(n_candidates):
            responses.append(
                {
                    "prompt_id": pid,
                    "candidate": names[c],
                    "text": f"simulated response of {names[c]} to {pid}",
                    "human": {truth_field: round(float(human[c]), 4), "latent": round(float(quality[c]), 6)},
                }
            )
        if pairwise:
            probs_matrix = pairwise_probabilities(latent, judge, rng)
            for i in range(n_candidates):
                for j in range(n_candidates):
                    if i == j:
                        continue
                    p = float(probs_matrix[i, j])
                    records.append(
                        {
                            "kind": "pairwise",
                            "judge": judge.name,
                            "prompt_id": pid,
                            "candidates": [names[i], names[j]],
                            "probs": {"A": round(p, 8), "B": round(1.0 - p, 8)},
                        }
                    )
        if absolute:
            levels = np.arange(1, judge.levels + 1)
            for c in range(n_candidates):
                centre = (judge.levels + 1) / 2 + 1.5 * latent[c] + judge.absolute_noise * rng.normal()
                logits = -0.5 * (levels - centre) ** 2 * judge.overconfidence
                probs = np.exp(logits - logits.max())
                probs /= probs.sum()
                records.append(
                    {
                        "kind": "absolute",
                        "judge": judge.name,
                        "prompt_id": pid,
                        "candidates": [names[c]],
                        "probs": {str(int(k)): round(float(v), 8) for k, v in zip(levels, probs)},
                    }
                )
    return records, responses


def judge_parameters(judge: SimulatedJudge) -> dict:
    """The judge's parameters as a dict (for reports)."""
    return asdict(judge)


@dataclass(frozen=True)
class LengthLeaderboard:
    """A simulated reference campaign whose judge likes length: soft outcomes ``y`` (candidates ×
    prompts), lengths in characters, and the truth at equal length (percent)."""

    y: np.ndarray
    candidate_length: np.ndarray
    anchor_length: np.ndarray
    controlled_truth: np.ndarray
    quality: np.ndarray


def simulate_length_leaderboard(
    candidates: int = 12, prompts: int = 400, *, length_effect: float = 1.5, noise: float = 0.5, seed: int = 0
) -> LengthLeaderboard:
    """Candidates of quality θ_m ~ N(−0.5, 1) and verbosity v_m ~ N(0, 0.6) (independent of quality)
    answer prompts of difficulty γ_i ~ N(0, 1) against an anchor of length L_i ~ e^N(6.5, 0.5); a
    candidate's answer is L_i·e^(v_m + N(0, 0.3)) long. The judge's soft preference for the
    candidate is σ(θ_m + γ_i + ε + φ·tanh(Δ_mi / sd_m(Δ))), ε ~ N(0, ``noise``²), φ =
    ``length_effect`` (AlpacaEval's feature, :func:`orchestrator.raee.control.length_feature`);
    the truth is the same without the length term."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(-0.5, 1.0, candidates)
    verbosity = rng.normal(0.0, 0.6, candidates)
    difficulty = rng.normal(0.0, 1.0, prompts)
    anchor_length = np.round(np.exp(rng.normal(6.5, 0.5, prompts)))
    candidate_length = np.round(anchor_length[None, :] * np.exp(verbosity[:, None] + rng.normal(0.0, 0.3, (candidates, prompts))))
    delta = candidate_length - anchor_length[None, :]
    feature = np.tanh(delta / delta.std(1, ddof=1, keepdims=True))
    base = quality[:, None] + difficulty[None, :] + rng.normal(0.0, noise, (candidates, prompts))
    return LengthLeaderboard(
        y=_sigmoid(base + length_effect * feature),
        candidate_length=candidate_length,
        anchor_length=anchor_length,
        controlled_truth=100 * _sigmoid(base).mean(1),
        quality=quality,
    )


def simulate_family_leaderboard(
    candidates: int = 10, prompts: int = 400, *, taste: float = 1.0, noise: float = 0.5, seed: int = 0
) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, str], float]:
    """A reference campaign judged by three judges of families ``x``, ``y`` and ``z``; the
    candidates alternate between families x and y, quality θ_m ~ N(0, 1), prompts of difficulty
    d_i ~ N(0, 1). Judge ``judge-x`` prefers its family: its soft outcome is σ(θ_m + d_i + ε +
    ``taste``·1[m of family x]), the others' σ(θ_m + d_i + ε), ε ~ N(0, ``noise``²). Returns the
    outcomes per judge (candidates × prompts), θ, the families (judges and candidates ``c0``…) and
    the taste on the win-rate scale: the mean over x's candidates of logit(mean_i σ(η + taste)) −
    logit(mean_i σ(η)) (averaging over prompts shrinks a per-prompt log-odds effect)."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(0.0, 1.0, candidates)
    own = np.arange(candidates) % 2 == 0
    difficulty = rng.normal(0.0, 1.0, prompts)
    outcomes, marginal = {}, []
    for judge, tasted in (("judge-x", True), ("judge-y", False), ("judge-z", False)):
        eta = quality[:, None] + difficulty[None, :] + rng.normal(0.0, noise, (candidates, prompts))
        outcomes[judge] = _sigmoid(eta + (taste * own[:, None] if tasted else 0.0))
        if tasted:
            with_taste, without = _sigmoid(eta[own] + taste).mean(1), _sigmoid(eta[own]).mean(1)
            marginal = list(np.log(with_taste / (1 - with_taste)) - np.log(without / (1 - without)))
    families = {f"c{m}": "x" if own[m] else "y" for m in range(candidates)} | {"judge-x": "x", "judge-y": "y", "judge-z": "z"}
    return outcomes, quality, families, float(np.mean(marginal))


def simulate_length_scores(
    candidates: int = 12, prompts: int = 200, *, length_effect: float = 3.0, noise: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, list[tuple]]:
    """Absolute 1–10 scores by a judge with a taste for length, across prompts (global scope):
    candidates of score s ~ N(0, 1) whose answers are e^N(6 + v_m, 0.4) characters long, v_m ~
    N(0, 0.5) independent of s; the judge's mean score is 5.5 + 1.5 s + κ x + ε, x the answer's
    normalised length difference against its prompt's typical answer
    (:func:`orchestrator.poe.covariates.answer_covariates`), κ = ``length_effect``, ε ~ N(0,
    ``noise``²), variance ``noise``². Returns the true scores and ``(item, mean, var, judge 0, x)``
    tuples (``Observations.from_lists``)."""
    from ...poe.covariates import answer_covariates

    rng = np.random.default_rng(seed)
    scores = rng.normal(0.0, 1.0, candidates)
    habit = rng.normal(0.0, 0.5, candidates)
    lengths = np.exp(6.0 + habit[:, None] + rng.normal(0.0, 0.4, (candidates, prompts)))
    absolutes = []
    for i in range(prompts):
        typical = {"length": float(lengths[:, i].mean())}
        for m in range(candidates):
            (x,) = answer_covariates("judge", f"c{m}", {"length": float(lengths[m, i])}, typical, ("length",), {})
            mean = 5.5 + 1.5 * scores[m] + length_effect * x + rng.normal(0.0, noise)
            absolutes.append((m, float(mean), noise**2, 0, x))
    return scores, absolutes


def simulate_length_comparisons(
    candidates: int = 12,
    comparisons: int = 800,
    *,
    length_effect: float = 3.0,
    bold_effect: float = 0.0,
    controls: tuple[str, ...] = ("length",),
    noise: float = 0.3,
    seed: int = 0,
) -> tuple[np.ndarray, list[tuple]]:
    """Pairwise comparisons across prompts (global scope) by a judge with a taste for the longer
    answer and for bold: candidates of score s ~ N(0, 1) whose answers are e^N(6, 0.5) characters
    long by habit, varying by e^N(0, 0.4) from prompt to prompt, with Poisson(h) bold spans (h ~
    Poisson(3) for half the candidates, 0 for the others); P(first better) = σ(s_i − s_j + β_len z_len
    + β_bold z_bold + ε), z the normalised differences of :mod:`orchestrator.poe.covariates`, ε ~
    N(0, ``noise``²). Returns the true scores and ``(first, second, p, judge 0, *z[controls])``
    tuples (``Observations.from_lists``)."""
    from ...poe.covariates import comparison_covariates

    rng = np.random.default_rng(seed)
    scores = rng.normal(0, 1, candidates)
    habit = np.exp(rng.normal(6, 0.5, candidates))
    bold_habit = rng.poisson(3, candidates) * (np.arange(candidates) % 2)
    out = []
    for _ in range(comparisons):
        i, j = rng.choice(candidates, 2, replace=False)
        fi = {"length": float(habit[i] * np.exp(rng.normal(0, 0.4))), "bold": float(rng.poisson(bold_habit[i]))}
        fj = {"length": float(habit[j] * np.exp(rng.normal(0, 0.4))), "bold": float(rng.poisson(bold_habit[j]))}
        z_length, z_bold = comparison_covariates(fi, fj, ("length", "bold"))
        p = _sigmoid(np.asarray(scores[i] - scores[j] + length_effect * z_length + bold_effect * z_bold + rng.normal(0, noise)))
        out.append((int(i), int(j), float(p), 0, *comparison_covariates(fi, fj, controls)))
    return scores, out


def simulate_shared_bias_panel(
    seed: int,
    share: float,
    *,
    prompts: int = 400,
    judges: int = 3,
    people: tuple[float, ...] = (0.2, 0.35, 0.5, 0.6, 0.7, 0.8),
    victim: int = 4,
    bias: float = -1.2,
):
    """A reference campaign whose judges share a bias against one candidate: candidate k
    beats the anchor in people's eyes with probability ``σ(logit people[k] + d_i)`` on prompt i
    (``d_i ~ N(0, 1)``); each judge's soft outcome is ``σ(logit people[k] + d_i + b_k + e)``,
    ``e ~ N(0, 0.5)``, ``b = bias`` for ``victim`` and 0 otherwise; people label ``share`` of each
    candidate's prompts at random (a Bernoulli verdict). Returns ``(ReferenceJudgments, labels as
    (prompt, candidate, 1 or 0), people's win rate on the pool per candidate)``."""
    from scipy.special import expit, logit

    from ...raee import ReferenceJudgments

    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1, size=prompts)
    rows, labels, truth = [], [], []
    for k, p in enumerate(people):
        q = expit(logit(p) + difficulty)  # people's preference probability per prompt
        truth.append(q.mean())
        shift = bias if k == victim else 0.0
        for j in range(judges):
            f = expit(logit(p) + difficulty + shift + rng.normal(0, 0.5, size=prompts))
            rows += [("REF", f"judge{j}", f"c{k}", f"p{i}", 0, f[i], 0.0, 1 - f[i]) for i in range(prompts)]
        for i in rng.choice(prompts, size=int(share * prompts), replace=False):
            labels.append((f"p{i}", f"c{k}", float(rng.random() < q[i])))
    return ReferenceJudgments.from_rows(rows), labels, np.array(truth)
