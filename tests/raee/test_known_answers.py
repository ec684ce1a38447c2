"""Known-answer cases (choix's pattern): ``tests/data/known/known_answers.json`` holds inputs and the
answers ``tests/data/known/make_known.py`` computed without the package — RAEE's closed forms from
scipy.stats' Beta, the difficulty-corrected leaderboard of a table judged in lockstep, the neighbour
claims by hand, a placement judged on the whole board — and the package must give them back."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import DATA
from orchestrator.raee import raee_arrays
from orchestrator.raee.allocation import leaderboard_state, neighbour_claims
from orchestrator.raee.board import fit_board, place

CASES = json.loads((DATA / "known" / "known_answers.json").read_text())


@pytest.mark.parametrize("case", CASES["raee"], ids=lambda c: f"W+T/2={c['input']['total']} n={c['input']['n']}")
def test_raee_closed_forms_match_the_beta_posterior(case):
    given = case["input"]
    got = raee_arrays(np.array([given["total"]]), np.array([given["n"]]), level=given["level"], population=given["population"])
    for key, value in case["expected"].items():
        assert got[key][0] == pytest.approx(value, rel=1e-9, abs=1e-9), key


@pytest.mark.parametrize("case", CASES["leaderboard_state"], ids=lambda c: f"{len(c['input']['y'])} models")
def test_judged_in_lockstep_the_corrected_win_rates_are_the_plain_means(case):
    y = np.array([[np.nan if v is None else v for v in row] for row in case["input"]["y"]], dtype=float)
    estimate, _, n = leaderboard_state(y)
    assert np.allclose(estimate, case["expected"]["estimate"], atol=1e-9)
    assert list(n) == list((~np.isnan(y)).sum(1))


def test_neighbour_claims_by_hand():
    (case,) = CASES["neighbour_claims"]
    given = case["input"]
    args = (np.array(given["estimate"]), np.array(given["variance"]), given["z"])
    assert [list(c) for c in neighbour_claims(*args, None)] == case["expected"]["claims"]
    assert [list(c) for c in neighbour_claims(*args, 0.05)] == case["expected"]["claims_with_resolution_0.05"]


def test_a_candidate_judged_on_the_whole_board_gets_its_own_win_rate():
    (case,) = CASES["placement"]
    board = np.array(case["input"]["board"])
    outcomes = np.array(case["input"]["outcomes"])
    placed = place(fit_board([f"m{k}" for k in range(len(board))], board), np.arange(board.shape[1]), outcomes)
    assert (placed.win_rate, placed.low, placed.high) == pytest.approx(
        (case["expected"]["win_rate"], case["expected"]["low"], case["expected"]["high"]), abs=1e-12
    )
