"""The fifth reliability campaign (issue #59): numbers that respect their own data, exports safe to
open, inputs that cannot silently mean nothing. Each test fails on the code before its fix."""

from __future__ import annotations

import csv
import json
import random
import socket
import threading
import time

import pytest

from judgekit import reference_behaviour, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.errors import OrchestratorError
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.offline.export import answer_shares, spreadsheet_safe, winner
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


@pytest.mark.parametrize("field", ["out", "name", "task", "criterion"])
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
