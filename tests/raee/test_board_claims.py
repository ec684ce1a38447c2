"""Stopping claims about a board's models (``[reference] board`` with ``allocation = "adaptive"``):
the pure rule, and a one-candidate campaign that stops on a true claim or spends its budget."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from judgekit import board_run, placed_config, reference_behaviour, run_cli, write_config
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.raee.board_claims import BoardClaim, board_claim, look_depths, look_level

MODELS = ["a", "b", "c", "d"]
RATES = np.array([0.10, 0.30, 0.50, 0.70])


def test_the_looks_double_and_end_at_the_pool():
    assert look_depths(805, 4) == [4, 8, 16, 32, 64, 128, 256, 512, 805]
    assert look_depths(40, 4) == [4, 8, 16, 32, 40]
    assert look_depths(3, 4) == [3]
    # α over looks × candidates: 9 looks, 2 candidates
    assert look_level(805, 4, 2) == pytest.approx(1 - 0.05 / 18)


@pytest.mark.parametrize(
    ("low", "high", "resolution", "expected"),
    [
        (0.35, 0.45, None, BoardClaim("between", "c", "b")),  # between b (30%) and c (50%)
        (0.75, 0.90, None, BoardClaim("between", None, "d")),  # above every model
        (0.01, 0.05, None, BoardClaim("between", "a", None)),  # below every model
        (0.45, 0.55, None, None),  # c inside: nothing claimed without a resolution
        (0.45, 0.55, 0.05, BoardClaim("tied", None, None, ("c",))),  # within 5 points of c at both ends
        (0.40, 0.55, 0.05, None),  # 10 points below c: not within 5
        (0.25, 0.55, 0.30, BoardClaim("tied", None, None, ("b", "c"))),  # both inside, each within 30 of both ends
        (0.25, 0.55, 0.20, None),  # b is 25 points from the top end
    ],
)
def test_a_claim_is_made_only_when_the_interval_supports_it(low, high, resolution, expected):
    assert board_claim(MODELS, RATES, low, high, resolution) == expected


def test_the_claims_read_as_a_user_reads_them():
    rates = dict(zip(MODELS, RATES))
    assert board_claim(MODELS, RATES, 0.35, 0.45).words("new", rates, None) == "new is between c (50.0%) and b (30.0%)"
    assert "above every board model (the best: d, 70.0%)" in board_claim(MODELS, RATES, 0.8, 0.9).words("new", rates, None)
    assert "below every board model (the weakest: a, 10.0%)" in board_claim(MODELS, RATES, 0.0, 0.05).words("new", rates, None)
    tied = board_claim(MODELS, RATES, 0.48, 0.52, 0.05)
    assert tied is not None and tied.words("new", rates, 5.0) == "new is within 5 points of c (50.0%)"


def _newcomer(tmp_path, prompts, responses, quality: float):
    """The newcomer's responses with every answer at ``quality`` (the test judge reads it)."""
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    out = tmp_path / f"new-{quality}.jsonl"
    out.write_text("".join(json.dumps({**r, "text": re.sub(r"<<q=[\d.]+>>", f"<<q={quality:.4f}>>", r["text"])}) + "\n" for r in rows))
    return out


@pytest.mark.parametrize(("quality", "words"), [(1.0, "above every board model"), (0.0, "below every board model")])
def test_one_candidate_on_a_board_stops_early_on_a_true_claim(tmp_path, capsys, quality, words):
    """A newcomer far above (below) a board of 8 models stops before judging all 40 prompts, with a
    claim about the board's models that its full-data win rate bears out; the closing paragraph
    gives its place on the board, not "nothing to rank it against"."""
    with FakeOpenAIServer(reference_behaviour(slope=4.0)) as server:
        prompts, new_responses, board = board_run(tmp_path, server)
        newcomer = _newcomer(tmp_path, prompts, new_responses, quality)
        config = placed_config(tmp_path, server.url, prompts, newcomer, board.name, name="adaptive", max_calls=None, batch=4)
        config.write_text(config.read_text().replace("soft = true\n", 'soft = true\nallocation = "adaptive"\n'))
        config.write_text(config.read_text().replace(f'board = "{board.name}"', f'board = "runs/{board.name}"'))
        assert run_cli(["run", str(config)]) == 0
        out = capsys.readouterr().out
        full_config = write_config(
            tmp_path, server.url, name="full", prompts=prompts, responses=newcomer, max_calls=None, reference="soft = true\n"
        )
        full, _ = api.start(full_config)
    run = tmp_path / "runs" / "adaptive.sqlite"
    status = api.status(run).as_dict()
    assert "place on the board is settled" in status["stop_reason"] and words in status["stop_reason"]
    assert status["spent"]["calls"] < 40  # stopped before the pool was spent
    (truth,) = api.ranking(full).as_dict()["groups"][0]["ranking"]
    board_rates = api.ranking(run).as_dict()["groups"][0]["board"]["leaderboard"]
    if quality > 0.5:
        assert truth["win_rate"] > max(board_rates.values())
    else:
        assert truth["win_rate"] < min(board_rates.values())
    assert "placed on the board (8 models)" in out and "nothing to rank it against" not in out


def test_without_a_resolution_a_newcomer_among_close_models_spends_its_budget(tmp_path):
    """M8 (quality about 0.6) sits between board models 10 points apart; at the looks' level a
    20-call budget cannot settle it, so the run spends the budget and claims nothing."""
    with FakeOpenAIServer(reference_behaviour(slope=4.0)) as server:
        prompts, new_responses, board = board_run(tmp_path, server)
        config = placed_config(tmp_path, server.url, prompts, new_responses, board.name, name="close", max_calls=20, batch=4)
        config.write_text(config.read_text().replace("soft = true\n", 'soft = true\nallocation = "adaptive"\n'))
        config.write_text(config.read_text().replace(f'board = "{board.name}"', f'board = "runs/{board.name}"'))
        path, reason = api.start(config)
    assert api.status(path).as_dict()["spent"]["calls"] == 20 and "settled" not in reason
