"""The simplex model's default fit in Stan agrees with the numpyro fit: posterior means
of the expected scores within Monte Carlo error, rank intervals within one rank. Skipped where PyStan
(``pip install -e '.[stan]'``) or a C++ compiler is missing; ``.ci/run`` installs both."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

stan = pytest.importorskip("stan", reason="PyStan is not installed (pip install -e '.[stan]')")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.isolated,
    pytest.mark.skipif(shutil.which("g++") is None, reason="Stan compiles models with g++ (apt-get install g++)"),
]


def test_stan_and_numpyro_agree_on_simulated_data():
    from numpyro.diagnostics import effective_sample_size

    from orchestrator.poe import rank_intervals_from_draws
    from orchestrator.simplex import SimplexSettings, fit_simplex
    from orchestrator.simplex.simulate import from_model
    from orchestrator.simplex.stan import fit_stan, stan_program

    assert "edges1" in stan_program(3) and "edges3" in stan_program(5)
    assert "W[k] * R[j]" in stan_program(3) and "W[k]" not in stan_program(3, random_effects=False)
    # the default fixes β_max (data); fixed_beta=False samples it under its U(0, 20) hyperprior
    assert "real<lower=0> beta_max;" in stan_program(3) and "upper=20" not in stan_program(3)
    assert "real<lower=0.0, upper=20.0> beta_max;" in stan_program(3, fixed_beta=False)
    data, truth = from_model(3, 6, 3, 40, seed=1)
    chains, draws = 4, 600
    ours = fit_simplex(data, SimplexSettings(chains=chains, warmup=600, draws=draws, seed=0))
    theirs = fit_stan(data, chains=chains, warmup=600, draws=draws, seed=1)
    mine = ours.flat("expected")

    def mcse(x: np.ndarray) -> np.ndarray:
        by_chain = x.reshape(chains, draws, -1)
        return x.std(0) / np.sqrt(effective_sample_size(by_chain))

    z = (mine.mean(0) - theirs.mean(0)) / np.sqrt(mcse(mine) ** 2 + mcse(theirs) ** 2)
    assert np.abs(z).max() < 4.0, z
    a, b = rank_intervals_from_draws(mine), rank_intervals_from_draws(theirs)
    assert np.abs(a.lower.numpy() - b.lower.numpy()).max() <= 1
    assert np.abs(a.upper.numpy() - b.upper.numpy()).max() <= 1
    assert np.corrcoef(mine.mean(0), truth)[0, 1] > 0.8
