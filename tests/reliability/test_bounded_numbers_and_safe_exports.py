"""Numbers that respect their own data, exports safe to
open, inputs that cannot silently mean nothing. Each test fails on the code before its fix."""

from __future__ import annotations

import csv
import json
import random
import socket
import subprocess
import threading
import time

import pytest

from judgekit import board_run, placed_config, reference_behaviour, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.offline.runs.export import answer_shares, spreadsheet_safe, winner
from orchestrator.records.starter import StarterOptions, write_starter

# --- one meaning per column: the export's winner is the most probable answer -------------------


def _draws(n: int, width: int, seed: int) -> list[list[float]]:
    """Random option probabilities, with exact ties and zeros mixed in (the edges of argmax)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        values = [rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(width)]
        out.append(values if sum(values) > 0 else [1.0] + values[1:])
    return out


@pytest.mark.parametrize("values", _draws(300, 3, 59))
def test_winner_is_the_most_probable_answer_tie_included(values):
    a, b, c = values
    got = winner(["first", "second"], {"A": a, "B": b, "C": c})
    best = max(a, b, c)
    if c == best or a == b:
        assert got == "tie"
    else:
        assert got == ("first" if a == best else "second")


@pytest.mark.parametrize("values", _draws(100, 5, 60))
def test_winner_of_graded_verdicts_sums_each_side(values):
    grades = dict(zip(("A>>B", "A>B", "A=B", "B>A", "B>>A"), values))
    first, second, tie = answer_shares(grades)
    assert first + second + tie == pytest.approx(1.0)
    got = winner(["x", "y"], grades)
    if tie >= max(first, second) or first == second:
        assert got == "tie"
    else:
        assert got == ("x" if first > second else "y")


def test_a_judge_that_mostly_answers_tie_is_exported_as_tie():
    # p_first = 0.19 + 0.71 / 2 = 0.545 > 0.5: the old column said the anchor won
    assert winner(["anchor", "model"], {"A": 0.19, "B": 0.10, "C": 0.71}) == "tie"


# --- exports safe to open (OWASP CSV injection) ---------------------------------------------------


@pytest.mark.parametrize("text", ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_text_cells_that_start_a_formula_are_neutralised(text):
    assert spreadsheet_safe(text) == "'" + text


@pytest.mark.parametrize("value", [-0.25, 0, 3.5, True, None, "plain text", "a=b"])
def test_numbers_and_plain_text_stay_as_they_are(value):
    assert spreadsheet_safe(value) == value


def test_no_text_cell_reaches_a_spreadsheet_as_a_formula():
    rng = random.Random(5)
    alphabet = "=+-@\t\r'a1 \n\"é"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 6)))
        safe = spreadsheet_safe(text)
        assert isinstance(safe, str) and safe in (text, "'" + text)
        assert not safe.startswith(("=", "+", "-", "@", "\t", "\r"))


# --- names that reach generated files -------------------------------------------------------------


@pytest.mark.parametrize("field", ["out", "name"])
def test_init_refuses_control_characters_in_what_it_writes(tmp_path, field):
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=2)
    options = dict(prompts=prompts, responses=responses, out=tmp_path / "starter.toml", name="starter")
    bad = "x\ny = 1" if field != "out" else None
    if field == "out":
        options["out"] = tmp_path / "a\nmax_calls = 99.toml"
    else:
        options[field] = bad
    with pytest.raises(OrchestratorError, match="control character"):
        write_starter(StarterOptions(**options))
    assert not list(tmp_path.glob("*.toml"))


@pytest.mark.parametrize("field", ["task", "criterion"])
def test_init_writes_a_newline_in_the_task_escaped_never_as_a_config_key(tmp_path, field):
    """A task or criterion is free text written as an escaped TOML string: several lines are kept
    as they are and can never start a key of their own."""
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=2)
    out = write_starter(
        StarterOptions(prompts=prompts, responses=responses, out=tmp_path / "starter.toml", name="starter", **{field: "x\ny = 1"})
    )
    import tomllib

    judging = tomllib.loads(out.read_text())["judging"]
    assert judging[field] == "x\ny = 1" and "y" not in judging


# --- a one-candidate reference campaign's dry run -------------------------------------------------


def test_one_candidate_reference_campaign_dry_run_calls_the_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_JUDGES", str(write_judge(tmp_path / "judges", "noisy-openai")))
    data = write_dataset(tmp_path / "data", prompts=3, candidates=1, reference=0.5)
    with FakeOpenAIServer(reference_behaviour()) as server:
        config = write_config(
            tmp_path,
            server.url,
            name="one",
            prompts=data[0],
            responses=data[1],
            judges='["local-openai"]',
            reference='template = "raee-pairwise-summary"\n',
        )
        report = api.dry_run(config, smoke=True)
    assert [row["status"] for row in report["smoke"]] == ["ok"]
    assert report["possible requests"] == 3 if "possible requests" in report else True


def _formula_behaviour(body: dict):
    """A judge whose answer text starts with a formula (the option read from its log-probabilities)."""
    from judgekit import quality_behaviour

    status, headers, answer = quality_behaviour(body)
    answer["choices"][0]["message"]["content"] = '=HYPERLINK("http://evil.example","A")'
    return status, headers, answer


def test_csv_export_of_a_real_run_neutralises_formula_text_and_keeps_numbers(tmp_path):
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=4)
    with FakeOpenAIServer(_formula_behaviour) as server:
        config = write_config(tmp_path, server.url, name="formula", prompts=prompts, responses=responses, max_calls=6)
        path, _ = api.start(config)
    out = tmp_path / "judgments.csv"
    rows_written = api.export(path, out=out, fmt="csv", with_text=True)
    rows = list(csv.DictReader(out.open(newline="")))
    assert len(rows) == rows_written > 0
    for row in rows:
        assert row["text"].startswith("'=HYPERLINK")  # shown as text, never run
        assert all(not cell.startswith(("=", "+", "@", "\t", "\r")) for cell in row.values())
        float(row["p_first"]), float(row["prob_A"])  # numbers stay numbers
        probs = {"A": float(row["prob_A"]), "B": float(row["prob_B"])}
        assert row["winner"] == winner([row["first"], row["second"]], probs)


# --- the labelling server under a crowd -----------------------------------------------------------


def test_labelling_server_answers_a_crowd_of_200_at_once(tmp_path):
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=3, seed=2)
    from judgekit import quality_behaviour

    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="crowd", prompts=prompts, responses=responses, max_calls=6)
        path, _ = api.start(config)
    statuses: list[int | None] = [None] * 200
    ready = threading.Barrier(200, timeout=30)

    def hit(k: int, url: str) -> None:
        host, port = url.split("//")[1].rstrip("/").split(":")
        try:
            ready.wait()
            with socket.create_connection((host, int(port)), timeout=20) as conn:
                conn.sendall(f"GET /api/next HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
                head = conn.recv(64)
            statuses[k] = int(head.split()[1]) if head.startswith(b"HTTP/") else -1
        except (OSError, threading.BrokenBarrierError, ValueError):
            statuses[k] = -1

    started = time.monotonic()
    with api.label_server(path, annotator="crowd") as label:
        threads = [threading.Thread(target=hit, args=(k, label.url)) for k in range(200)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    elapsed = time.monotonic() - started
    assert all(s in (200, 503) for s in statuses), sorted(set(map(str, statuses)))
    assert statuses.count(200) >= 64  # at least the served ones; the rest told to retry, never dropped
    assert elapsed < 30
    json.dumps(statuses)


# --- numbers bounded by their data: a placement within what its judged outcomes allow ------------


def _random_board(rng, models: int, prompts: int):
    from scipy.special import expit

    theta = rng.normal(0, 1.2, models)
    b = rng.normal(0, 1.5, prompts)
    a = rng.uniform(0.3, 2.5, prompts)
    p = expit(a[None, :] * (theta[:, None] - b[None, :]))
    soft = rng.random() < 0.5
    y = p if soft else (rng.random(p.shape) < p).astype(float)
    return y


@pytest.mark.parametrize("seed", range(40))
def test_every_placement_respects_the_bounds_of_its_judged_outcomes(seed):
    import numpy as np

    from orchestrator.raee.board import fit_board, place

    rng = np.random.default_rng(seed)
    models, prompts = int(rng.integers(3, 12)), int(rng.integers(6, 40))
    y = _random_board(rng, models, prompts)
    board = fit_board([f"m{k}" for k in range(models)], y)
    for _ in range(5):
        n = int(rng.integers(1, prompts + 1))
        judged = rng.choice(prompts, n, replace=False)
        # adversarial outcomes too: all won, all lost, steep slopes on few prompts
        outcomes = rng.choice([rng.random(n), np.ones(n), np.zeros(n), (rng.random(n) < 0.5).astype(float)])
        result = place(board, judged, outcomes)
        floor, ceiling = outcomes.sum() / prompts, (outcomes.sum() + prompts - n) / prompts
        assert floor - 1e-12 <= result.low <= result.win_rate <= result.high <= ceiling + 1e-12
        assert 0.0 <= result.low and result.high <= 1.0


@pytest.mark.parametrize("seed", range(20))
def test_intervals_that_hold_together_contain_the_one_at_a_time_ones_on_the_board(seed):
    import numpy as np

    from orchestrator.offline.raee.board_placement import _place_all

    rng = np.random.default_rng(seed)
    models, prompts = int(rng.integers(3, 12)), int(rng.integers(6, 40))
    y = _random_board(rng, models, prompts)
    names = [f"c{k}" for k in range(4)]
    own = np.full((4, prompts), np.nan)
    for k in range(4):
        where = rng.choice(prompts, int(rng.integers(1, prompts + 1)), replace=False)
        own[k, where] = rng.random(len(where))
    _, placed = _place_all(
        [f"m{k}" for k in range(models)], [f"p{j}" for j in range(prompts)], y, (names, [f"p{j}" for j in range(prompts)], own), "b", 0.95
    )
    for row in placed.values():
        assert (
            row["win_rate_low_together"] <= row["win_rate_low"] <= row["win_rate"] <= row["win_rate_high"] <= row["win_rate_high_together"]
        )
        assert 0.0 <= row["win_rate_low_together"] and row["win_rate_high_together"] <= 100.0


# --- a board that cannot serve is one line before any call; a run outlives its board's file -------


def test_a_board_that_shares_no_prompt_or_holds_a_candidate_is_refused_before_any_call(tmp_path, capsys):
    from judgekit import run_cli

    with FakeOpenAIServer(reference_behaviour(slope=4.0)) as server:
        prompts, new_responses, board = board_run(tmp_path, server)
        # other prompts: the same rows under new ids
        other_prompts, other_responses = tmp_path / "other-prompts.jsonl", tmp_path / "other-responses.jsonl"
        other_prompts.write_text(
            "".join(json.dumps({**json.loads(x), "id": "q-" + json.loads(x)["id"]}) + "\n" for x in prompts.read_text().splitlines())
        )
        other_responses.write_text(
            "".join(
                json.dumps({**json.loads(x), "prompt_id": "q-" + json.loads(x)["prompt_id"]}) + "\n"
                for x in new_responses.read_text().splitlines()
            )
        )
        cases = {
            "apart": (other_prompts, other_responses, "shares no prompt"),
            "already": (prompts, tmp_path / "board.jsonl", "already holds"),
        }
        for name, (p, r, said) in cases.items():
            config = write_config(
                tmp_path,
                server.url,
                name=name,
                prompts=p,
                responses=r,
                max_calls=10,
                reference=f'soft = true\nboard = "{board.as_posix()}"\n',
            )
            before = len(server.requests) if hasattr(server, "requests") else None
            assert run_cli(["run", str(config), "--dry-run"]) == 2
            err = capsys.readouterr().err
            assert said in err and len(err.strip().splitlines()) == 1, err
            assert not (tmp_path / "runs" / f"{name}.sqlite").exists()
            if before is not None:
                assert len(server.requests) == before


def test_a_placed_run_outlives_its_board_file_moved_or_edited(tmp_path, capsys):
    import shutil
    import sqlite3

    from judgekit import run_cli

    with FakeOpenAIServer(reference_behaviour(slope=4.0)) as server:
        prompts, new_responses, board = board_run(tmp_path, server)
        config = placed_config(tmp_path, server.url, prompts, new_responses, board.as_posix())
        placed, _ = api.start(config)
    first = api.ranking(placed).as_dict()["groups"][0]
    assert first["board"]["file"] == "unchanged since this run started"
    moved = tmp_path / "elsewhere.sqlite"
    shutil.move(board, moved)
    again = api.ranking(placed).as_dict()["groups"][0]
    assert "no longer at" in again["board"]["file"]
    assert again["ranking"] == first["ranking"]  # the same placements from the run's own copy
    assert run_cli(["status", str(placed)]) == 0 and run_cli(["rank", str(placed)]) == 0
    assert "no longer at" in capsys.readouterr().out
    shutil.move(moved, board)
    db = sqlite3.connect(board)  # an edited board: one judgment's outcome flipped
    db.execute(
        'update judgments set probs = \'[{"A": 1.0, "B": 0.0, "C": 0.0}]\' where rowid = (select min(rowid) from judgments where status = \'ok\')'
    )
    db.commit()
    db.close()
    edited = api.ranking(placed).as_dict()["groups"][0]
    assert "has changed since this run started" in edited["board"]["file"]
    assert edited["ranking"] == first["ranking"]


# --- the textbook self-preference design: a judge that is also a candidate, beside a neutral judge --


def test_a_judge_that_is_also_a_candidate_beside_a_neutral_judge_is_a_valid_family_map():
    from orchestrator.records.families import family_problem

    families = {"gpt-4o": "openai", "claude": "anthropic", "llama": "meta"}
    judges, candidates = ["gpt-4o", "claude"], ["gpt-4o", "llama"]
    assert family_problem(families, judges, candidates, where="--family") is None
    # no neutral judge: still refused, with the reason
    families_both_own = {"gpt-4o": "openai", "claude": "meta", "llama": "meta"}
    assert "a judge of none" in (family_problem(families_both_own, judges, candidates, where="--family") or "")
    # a candidate-free map is still refused
    assert "no candidate has a family" in (family_problem({"gpt-4o": "openai", "claude": "x"}, judges, ["other"], where="m") or "")


# --- a signal during a placement run: drained, resumable, nothing paid twice -------------------------


@pytest.mark.slow
def test_a_signal_during_a_board_placement_run_drains_and_resume_places_it(tmp_path):
    import os
    import signal
    import sqlite3

    import childkit

    from judgekit import run_cli

    behaviour = reference_behaviour(slope=4.0)

    def slow(body: dict):
        time.sleep(0.15)
        return behaviour(body)

    with FakeOpenAIServer(behaviour) as server:
        prompts, new_responses, board = board_run(tmp_path, server)
    with FakeOpenAIServer(slow) as server:
        config = placed_config(tmp_path, server.url, prompts, new_responses, board.as_posix(), batch=2, concurrency=1)
        proc = childkit.popen(
            ["run", str(config), "--no-cache"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        run = tmp_path / "runs" / "placed.sqlite"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(server.requests) < 5:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        proc.stderr.close()
        done = sqlite3.connect(run).execute("select count(*) from judgments").fetchone()[0]
        assert 0 < done < 24
        assert run_cli(["resume", str(run), "--no-cache"]) == 0
    db = sqlite3.connect(run)
    keys = [k for (k,) in db.execute("select key from judgments")]
    assert len(keys) == len(set(keys)) == 24  # every call once, none paid twice
    (group,) = api.ranking(run).as_dict()["groups"]
    (row,) = group["ranking"]
    assert row["placement"]["prompts"] == 24 and group["board"]["file"] == "unchanged since this run started"
