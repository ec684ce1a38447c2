"""Convergence diagnostics of a simplex fit: the ranked quantity, split R-hat and ESS per site,
and a per-chain report in which separate modes show up (:mod:`.inference` says why the ranking's
R-hat reads standardised expected scores)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ranking_draws", "split_diagnostics", "chain_report"]


def ranking_draws(expected: np.ndarray) -> np.ndarray:
    """Expected scores standardised per draw (minus their mean over candidates, over their spread;
    zeros where every candidate is equal): what the ranks depend on, with the latent scale's weakly
    identified location and spread (Theorem 2) removed — the convergence check's quantity."""
    centred = expected - expected.mean(axis=-1, keepdims=True)
    spread = centred.std(axis=-1, keepdims=True)
    return np.divide(centred, spread, out=np.zeros_like(centred), where=spread > 0)


def chain_report(samples: dict[str, np.ndarray], energy: np.ndarray) -> list[dict]:
    from scipy.stats import spearmanr

    pooled = samples["expected"].reshape(-1, samples["expected"].shape[-1]).mean(0)
    out = []
    for c in range(energy.shape[0]):
        row = {"chain": c, "potential_energy": round(float(energy[c].mean()), 2)}
        if "omega" in samples:
            row["omega"] = round(float(samples["omega"][c].mean()), 3)
        mine = samples["expected"][c].mean(0)
        row["spearman_vs_pooled"] = round(float(spearmanr(mine, pooled).statistic), 4) if mine.size > 2 else 1.0
        out.append(row)
    return out


def split_diagnostics(samples: dict[str, np.ndarray], chains: int) -> tuple[dict[str, float], dict[str, float]]:
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

    rhat, ess = {}, {}
    first = ("ranking", "expected_centred", "expected")
    order = [k for k in first if k in samples] + sorted(k for k in samples if k not in first)
    for name in order:
        x = np.asarray(samples[name], dtype=np.float64)
        flat = x.reshape(x.shape[:2] + (-1,))
        keep = flat.std(axis=(0, 1)) > 0  # constant entries (a judge's structural zeros) have no R-hat
        if not keep.any():
            continue
        flat = flat[..., keep]
        rhat[name] = float(np.nanmax(split_gelman_rubin(flat))) if chains >= 2 else math.nan
        ess[name] = float(np.nanmin(effective_sample_size(flat)))
    return rhat, ess
