"""A board as prior knowledge: the 2PL fit of a board and a new model placed on it,
checked on a board simulated from a known 2PL model (pure functions, no files)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from orchestrator.raee.board import fit_board, informative_order, place


def _world(seed: int = 0, models: int = 21, prompts: int = 400):
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(0, 1, models))
    a, b = np.exp(rng.normal(0, 0.4, prompts)), rng.normal(1.5, 1.0, prompts)
    p = expit(a[None, :] * (theta[:, None] - b[None, :]))
    y = np.clip(p + rng.normal(0, 0.1, p.shape), 0, 1)  # soft outcomes around the model's probability
    return theta, a, b, y


def test_the_fit_recovers_the_abilities_and_the_prompts():
    theta, a, b, y = _world()
    board = fit_board([f"m{k}" for k in range(len(theta))], y)
    assert np.corrcoef(board.theta, theta)[0, 1] > 0.99
    assert np.corrcoef(-board.c / board.a, b)[0, 1] > 0.9  # difficulty
    assert np.allclose(board.win_rate, y.mean(1))


def test_a_new_model_is_placed_without_bias_and_its_interval_covers():
    theta, a, b, y = _world()
    held = 10  # in the middle of the board
    board = fit_board([f"m{k}" for k in range(len(theta)) if k != held], np.delete(y, held, axis=0))
    truth = y[held].mean()
    errors, plain, covered = [], [], 0
    for seed in range(40):
        chosen = np.random.default_rng(seed).permutation(y.shape[1])[:60]
        placed = place(board, chosen, y[held, chosen])
        assert placed.in_range and placed.n == 60
        errors.append(placed.win_rate - truth)
        plain.append(placed.plain - truth)
        covered += placed.low <= truth <= placed.high
    assert abs(np.mean(errors)) < 0.01  # unbiased within a point
    assert np.mean(np.abs(errors)) < np.mean(np.abs(plain))  # the board helps
    assert covered >= 34  # 95% intervals: at least 85% of 40


def test_a_model_stronger_than_the_board_falls_back_to_the_sample():
    theta, a, b, y = _world()
    board = fit_board([f"m{k}" for k in range(15)], y[:15])  # the 6 strongest left out
    strongest = y[-1]
    chosen = np.random.default_rng(1).permutation(y.shape[1])[:80]
    placed = place(board, chosen, strongest[chosen])
    assert not placed.in_range or placed.theta > board.theta.max() - 0.5
    assert abs(placed.win_rate - strongest.mean()) < 0.06


def test_the_most_informative_prompts_come_first():
    theta, a, b, y = _world()
    board = fit_board([f"m{k}" for k in range(len(theta))], y)
    order = informative_order(board, 0.0, np.arange(y.shape[1]))
    p = board.predicted(0.0)
    information = board.a**2 * p * (1 - p)
    assert information[order[0]] == information.max() and information[order[-1]] == information.min()


def test_a_candidate_judged_on_every_prompt_gets_its_own_win_rate_exactly():
    """The pool's win rate counts the judged prompts as they are and predicts only the rest: judged on
    the whole pool, a candidate's placement is its plain win rate with a point interval (before, the
    model's cross-fitted prediction — off by up to a tenth of a point — with a zero-width interval that
    missed the candidate's own win rate); judged on all but a few, it is within a hair of it."""
    theta, a, b, y = _world()
    for held in (3, 10, 18):  # low, middle and high on the board
        board = fit_board([f"m{k}" for k in range(len(theta)) if k != held], np.delete(y, held, axis=0))
        everything = np.arange(y.shape[1])
        placed = place(board, everything, y[held])
        assert placed.win_rate == placed.low == placed.high
        assert abs(placed.win_rate - y[held].mean()) < 1e-12
        almost = everything[:-4]
        near = place(board, almost, y[held, almost])
        assert abs(near.win_rate - y[held].mean()) < 4 / y.shape[1]  # only 4 of 400 outcomes predicted
        assert near.low <= y[held].mean() <= near.high


def test_a_board_whose_models_all_tie_fits_without_overflow():
    """Three models with the same outcomes on three prompts (a tiny extended run): the fit stays
    finite instead of dividing by a spread of 0 (discriminations driven to 0, their log to -inf),
    and a newcomer placed on it gets a finite win rate in [0, 1]."""
    import warnings

    y = np.tile(np.array([[1.0, 0.0, 0.5]]), (3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        board = fit_board(["a", "b", "c"], y)
        placed = place(board, np.array([0, 2]), np.array([1.0, 0.5]))
    assert np.isfinite(board.a).all() and np.isfinite(board.c).all() and np.isfinite(board.theta).all()
    assert 0.0 <= placed.low <= placed.win_rate <= placed.high <= 1.0


def test_a_weak_model_drawn_unluckily_low_still_gets_an_interval_that_reaches_its_win_rate():
    # hard 0/1 outcomes of a weak model (win rate 11%): a subset with few wins has a small
    # sample variance, and an interval built on it at the estimate falls short of the truth
    rng = np.random.default_rng(3)
    theta, a, b, _ = _world()
    p = expit(a[None, :] * (theta[:, None] - b[None, :]))
    y = (rng.random(p.shape) < p).astype(float)
    held = 1  # the board's weakest model (4%) below it
    board = fit_board([f"m{k}" for k in range(len(theta)) if k != held], np.delete(y, held, axis=0))
    truth = y[held].mean()
    assert 0.05 < truth < 0.12
    above = covered = 0
    for seed in range(300):
        chosen = np.random.default_rng(seed).permutation(y.shape[1])[:40]
        placed = place(board, chosen, y[held, chosen])
        covered += placed.low <= truth <= placed.high
        above += truth > placed.high
    assert covered >= 0.93 * 300
    assert above <= 0.04 * 300  # the misses are not all on the side of the unlucky draws


def test_one_or_two_judged_prompts_give_an_interval_as_wide_as_they_leave_it():
    # with too few prompts for the board's regression the estimate is the plain mean, whose variance
    # is the outcomes' whole spread — not the board's residual spread (on this board of soft outcomes
    # about 0.1 sd around the model, one won prompt gave 82–100%)
    theta, a, b, y = _world()
    board = fit_board([f"m{k}" for k in range(len(theta))], y)
    one = place(board, np.array([3]), np.array([1.0]))
    assert one.win_rate > 0.99 and one.low < 0.5 and one.high == 1.0
    two = place(board, np.array([3, 4]), np.array([0.0, 1.0]))
    assert two.low < 0.15 and two.high > 0.85
