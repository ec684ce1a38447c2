"""Humans in the loop: the items a person labels first, the labelling server
storing each verdict once in the run file, and the page itself in a real headless Chromium — five
items labelled by keyboard across a kill -9 and a restart, each verdict in the file exactly once."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys

import pytest

from judgekit import call_label_server, quality_behaviour, reference_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.people.choice import absolute_items, offer_order, pairwise_items

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_items_come_in_order_of_disagreement_per_minute_of_reading():
    short = {("p1", ("a", "b")): 250, ("p2", ("a", "b")): 250, ("p3", ("a", "b")): 3000}
    judgments = [
        ("p1", "a", "b", 0.9),
        ("p1", "b", "a", 0.9),  # the second judge says b: split verdicts, u = (0.9 + 0.1) / 2
        ("p2", "a", "b", 0.9),
        ("p2", "a", "b", 0.9),  # both sure of a
        ("p3", "b", "a", 0.5),
        ("p3", "a", "b", 0.5),  # both unsure, but 3,000 characters to read
    ]
    items = pairwise_items(judgments, lambda prompt, names: short[(prompt, names)])
    # by hand: p1 d = (4·0.5·0.5 + 2·0.4) / 2 = 0.9 over 0.5 min; p2 (4·0.9·0.1 + 0) / 2 = 0.18 over
    # 0.5 min; p3 (1 + 0) / 2 = 0.5 over 3.25 min
    assert [i.prompt_id for i in items] == ["p1", "p2", "p3"]
    assert [round(i.priority, 4) for i in items] == [1.8, 0.36, round(0.5 / 3.25, 4)]
    assert items[0].candidates == ("a", "b") and items[0].judged == 2
    levels = absolute_items(
        [("p1", "x", {"1": 1.0}), ("p1", "x", {"5": 1.0}), ("p1", "y", {"3": 1.0}), ("p1", "y", {"3": 1.0})], 5, lambda p, n: 750
    )
    # x: two judges at opposite ends (split 2·0.5 = 1, unsure 0): d = 0.5; y: agreed and sure: 0
    assert [(i.candidates, i.disagreement) for i in levels] == [(("x",), 0.5), (("y",), 0.0)]
    # rounds: x's second answer, however disputed, waits until y has had its first
    spread = offer_order(
        absolute_items(
            [("p1", "x", {"1": 1.0}), ("p1", "x", {"5": 1.0}), ("p2", "x", {"1": 1.0}), ("p2", "x", {"5": 1.0}), ("p1", "y", {"3": 1.0})],
            5,
            lambda p, n: 750,
        ),
        "disagreement",
    )
    assert [(i.prompt_id, i.candidates[0]) for i in spread] == [("p1", "x"), ("p1", "y"), ("p2", "x")]
    shuffled = offer_order(spread, "random", seed=3)
    assert [i.candidates[0] for i in shuffled[:2]] in (["x", "y"], ["y", "x"]) and shuffled == offer_order(spread[::-1], "random", seed=3)


@pytest.fixture
def judged_run(tmp_path):
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=4, seed=2)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="people", prompts=prompts, responses=responses, max_calls=16)
        path, _ = api.start(config)
    return path


def test_each_verdict_is_stored_once_and_read_by_judges(judged_run, tmp_path, capsys):
    path = judged_run
    with api.label_server(path, annotator="ana") as server:
        status, first = call_label_server(server.url + "api/next")
        assert status == 200 and not first["done"] and first["progress"]["labelled"] == 0
        item = first["item"]
        assert item["kind"] == "pairwise" and item["options"] == ["A", "B", "tie"] and len(item["answers"]) == 2
        assert all("<<q=" in text for text in item["answers"]) and "M0" not in json.dumps(item)  # texts, not names
        assert call_label_server(server.url + "api/label", {"item": item["id"], "verdict": "A"}) == (
            200,
            {
                "stored": True,
                "progress": {"labelled": 1, "this_session": 1, "items": first["progress"]["items"], "left": first["progress"]["left"] - 1},
            },
        )
        again = call_label_server(server.url + "api/label", {"item": item["id"], "verdict": "B"})  # a double click
        assert again[0] == 200 and again[1]["stored"] is False
        assert call_label_server(server.url + "api/label", {"item": item["id"], "verdict": "C"}) == (
            400,
            {"error": "a pairwise verdict is 'A', 'B' or 'tie'"},
        )
        assert call_label_server(server.url + "api/label", {"item": "nope", "verdict": "A"}) == (400, {"error": "unknown item"})
        # another site's page, DNS rebinding, a cross-site form: refused, nothing stored
        for headers, expected in (
            ({"Origin": "http://evil.example"}, 403),
            ({"Host": "evil.example"}, 403),
            ({"Content-Type": "text/plain"}, 415),
        ):
            assert call_label_server(server.url + "api/label", {"item": item["id"], "verdict": "A"}, headers)[0] == expected, headers
        assert call_label_server(server.url + "api/next")[1]["item"]["id"] != item["id"]
    rows = sqlite3.connect(path).execute("select item, annotator, first, second, winner from human_labels").fetchall()
    assert len(rows) == 1 and rows[0][1] == "ana" and rows[0][4] == rows[0][2]  # verdict A = the answer shown first
    kind, prompt_id, *names = json.loads(rows[0][0])
    assert kind == "pairwise" and item["prompt"].startswith(f"Article {prompt_id[1:]}:") and names == sorted(rows[0][2:4])
    # the run is untouched otherwise and still a run file; the labels are exported and used by `judges`
    assert api.status(path).as_dict()["state"] == "finished" and api.export(path, out=tmp_path / "log.jsonl") == 16
    capsys.readouterr()
    assert run_cli(["label", str(path), "--export", str(tmp_path / "ana.jsonl")]) == 0
    (exported,) = [json.loads(line) for line in (tmp_path / "ana.jsonl").read_text().splitlines()]
    assert exported["annotator"] == "ana" and exported["winner"] == exported["first"]
    assert run_cli(["judges", str(path), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["judges"]
    assert row["compared"] >= 1
    # `rank` shows people's ranking beside the judges' for the group the label speaks to (per_prompt)
    groups = {g["group"]: g for g in api.ranking(path).as_dict()["groups"]}
    assert {key for key, g in groups.items() if "people" in g} == {prompt_id} and groups[prompt_id]["people"]["labels"] == 1
    assert run_cli(["rank", str(path)]) == 0
    assert f"{prompt_id}: people's ranking" in capsys.readouterr().out
    for args, message in [
        (["--annotator", ""], "--annotator: is empty"),
        (["--port", "70000"], "--port must be in 0..65535"),
        (["--order", "best"], "--order must be 'random' or 'disagreement'"),
        (["--export", str(path)], "--export"),  # never over the run file it reads
    ]:
        assert run_cli(["label", str(path), *args]) == 2, args
        assert message in capsys.readouterr().err, args
    assert run_cli(["label", str(tmp_path / "missing.sqlite")]) == 2
    assert sqlite3.connect(path).execute("select count(*) from human_labels").fetchone() == (1,)  # nothing changed


def _start_server(path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "label", str(path), "--annotator", "ana"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    line = process.stdout.readline() if process.stdout else ""
    assert line.startswith("labelling page: http://127.0.0.1:"), (line, process.stderr.read() if process.poll() is not None else "")
    return process, line.split(": ", 1)[1].strip()


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (.ci/run installs the Debian package)")
def test_five_items_labelled_by_keyboard_across_a_kill_and_a_restart(judged_run):
    sync_api = pytest.importorskip("playwright.sync_api")
    path = judged_run
    problems: list[str] = []
    process, url = _start_server(path)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page()
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.goto(url)
            seen = []
            for k, key in enumerate(["a", "b", "t"]):
                page.wait_for_selector(f"#progress:has-text('{k} of ')")
                seen.append(page.locator("#answers").inner_text())
                page.keyboard.press(key)
            page.wait_for_selector("#progress:has-text('3 of ')")
            process.kill()  # kill -9: no shutdown, no goodbye
            process.wait(timeout=10)
            process, url = _start_server(path)
            page.goto(url)  # the page of the new server: it resumes at the fourth item
            page.wait_for_selector("#progress:has-text('3 of ')")
            for k, key in zip((3, 4), ["2", "1"]):
                page.wait_for_selector(f"#progress:has-text('{k} of ')")
                assert page.locator("#answers").inner_text() not in seen  # never asked twice
                seen.append(page.locator("#answers").inner_text())
                page.keyboard.press(key)
            page.wait_for_selector("#progress:has-text('5 of ')")
            assert "(2 in this session)" in page.locator("#progress").inner_text()
            browser.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0 and "stopped: 2 labels stored in this session, 5 of" in err, err
    assert problems == []
    rows = (
        sqlite3.connect(path)
        .execute("select item, annotator, winner, first, second from human_labels order by created_at, rowid")
        .fetchall()
    )
    assert len(rows) == 5 and len({r[0] for r in rows}) == 5 and {r[1] for r in rows} == {"ana"}
    winners = [r[2] if r[2] == "tie" else ("A" if r[2] == r[3] else "B") for r in rows]
    assert winners == ["A", "B", "tie", "B", "A"]  # keys a, b, t, then 2, 1: in order, once each


def test_labels_imported_from_csv_are_stored_once_with_their_source(judged_run, tmp_path, capsys):
    path = judged_run
    people = tmp_path / "people.csv"
    people.write_text("prompt_id,candidate,score,first,second,winner,annotator\np0,M0,4,,,,ana\np0,M1,2,,,,ana\np1,,,M0,M2,tie,ben\n")
    assert run_cli(["label", str(path), "--import", str(people)]) == 0
    assert "3 labels added, 0 replaced" in capsys.readouterr().err
    assert run_cli(["label", str(path), "--import", str(people)]) == 0  # again: nothing new
    again = capsys.readouterr().err
    assert "0 labels added, 0 replaced" in again and "3 unchanged" in again
    rows = sqlite3.connect(path).execute("select kind, annotator, source from human_labels order by rowid").fetchall()
    assert rows == [("absolute", "ana", "import:people.csv")] * 2 + [("pairwise", "ben", "import:people.csv")]
    # a corrected file: ana's score of M1 and ben's verdict change, one label is new
    fixed = tmp_path / "fixed.csv"
    fixed.write_text(
        "prompt_id,candidate,score,first,second,winner,annotator\np0,M0,4,,,,ana\np0,M1,5,,,,ana\np1,,,M2,M0,M2,ben\np1,M0,3,,,,ana\n"
    )
    assert run_cli(["label", str(path), "--import", str(fixed)]) == 0
    assert "1 labels added, 2 replaced" in (err := capsys.readouterr().err) and "1 unchanged" in err, err
    db = sqlite3.connect(path)
    assert db.execute("select score from human_labels where candidate = 'M1' and annotator = 'ana'").fetchall() == [(5.0,)]
    assert db.execute("select winner from human_labels where annotator = 'ben'").fetchall() == [("M2",)]
    history = db.execute("select candidate, score, winner, source, replaced_by from human_labels_history order by rowid").fetchall()
    assert history == [
        ("M1", 2.0, None, "import:people.csv", "import:fixed.csv"),
        (None, None, "tie", "import:people.csv", "import:fixed.csv"),
    ]
    typo = tmp_path / "typo.csv"
    typo.write_text("prompt_id,candidate,score\np0,M3,1\np0,M9,5\n")
    assert run_cli(["label", str(path), "--import", str(typo)]) == 2
    assert "'M9' has no answer to prompt 'p0'" in capsys.readouterr().err
    assert sqlite3.connect(path).execute("select count(*) from human_labels").fetchone() == (4,)  # all or none
    assert run_cli(["judges", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["judges"][0]["compared"] >= 1


def test_a_reference_campaign_is_labelled_against_its_anchor_and_fit_raee_uses_the_labels(tmp_path, capsys):
    """The anchor "dataset" is each prompt's reference text: the page shows it as one of the two
    answers, and `fit raee RUN` reads the run's own labels (people's win rate beside the judges')."""
    prompts, responses = write_dataset(tmp_path / "data", prompts=4, candidates=3, seed=1, reference=0.5)
    with FakeOpenAIServer(reference_behaviour()) as server:
        config = write_config(
            tmp_path, server.url, name="anchored", prompts=prompts, responses=responses, max_calls=None, reference="repeats = 1"
        )
        path, _ = api.start(config)
    with api.label_server(path, annotator="ana") as server:
        first = call_label_server(server.url + "api/next")[1]
        assert first["progress"]["items"] == 12 and any(text.startswith("Reference summary") for text in first["item"]["answers"])
        while not (payload := call_label_server(server.url + "api/next")[1])["done"]:
            reference_first = payload["item"]["answers"][0].startswith("Reference summary")
            assert call_label_server(server.url + "api/label", {"item": payload["item"]["id"], "verdict": "B" if reference_first else "A"})[
                1
            ]["stored"]
    assert run_cli(["fit", "raee", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = [r for r in report["rows"] if r["judge"] == "local-openai"]
    assert report["human_labels"] == 12 and all(
        r["people_labels"] == 4 and r["people"] == 1.0 for r in rows
    )  # ana always preferred the candidate
    # the labels name the anchor as the judgments do, so they travel: exported, imported into a copy
    exported = tmp_path / "ana.jsonl"
    assert run_cli(["label", str(path), "--export", str(exported)]) == 0
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(lines) == 12 and all("reference" in (x["first"], x["second"]) for x in lines)
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(path.read_bytes())
    db = sqlite3.connect(copy)
    db.execute("drop table human_labels")
    db.commit()
    db.close()
    assert run_cli(["label", str(copy), "--import", str(exported)]) == 0
    assert "12 labels added" in capsys.readouterr().err


def test_a_run_asks_people_between_rounds_and_the_page_offers_those_items_first(tmp_path, capsys):
    prompts, responses = write_dataset(tmp_path / "data", prompts=3, candidates=4, seed=2)
    people = '["local-openai"]\npeople = "human"'  # judges/human.toml: kind = "human", per_round = 2
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="asks", prompts=prompts, responses=responses, max_calls=24, judges=people)
        path, _ = api.start(config)
    conn = sqlite3.connect(path)
    asked = conn.execute("select item, round, position from label_requests order by round, position").fetchall()
    planned = conn.execute("select max(round) from requests").fetchone()[0]
    judged = {(row[0], row[1]) for row in conn.execute("select prompt_id, round from judgments where status = 'ok'")}
    conn.close()
    # two items after every round planned from judged rounds (the first is planned from none) and two
    # at the end, from every judgment; each once
    assert len(asked) == 2 * planned and len({item for item, _, _ in asked}) == len(asked)
    assert [r for _, r, _ in asked][-2:] == [planned + 1] * 2
    for item, round_no, _ in asked:  # an item the judges had judged in a round the request was planned from
        prompt_id = json.loads(item)[1]
        assert any(p == prompt_id and r < round_no for p, r in judged), (item, round_no)
    with api.label_server(path, annotator="ana") as api_server:
        # the page offers the run's requests first, in the order asked, marked as such
        assert [item.key for item in api_server.session.items[: len(asked)]] == [item for item, _, _ in asked]
        status, first = call_label_server(api_server.url + "api/next")
        assert status == 200 and first["item"]["asked_by_run"] is True
        assert call_label_server(api_server.url + "api/label", {"item": first["item"]["id"], "verdict": "tie"})[1]["stored"] is True
        assert call_label_server(api_server.url + "api/next")[1]["item"]["asked_by_run"] is True
    assert api.status(path).as_dict()["people"] == {"asked": len(asked), "asked_labelled": 1, "labels": 1}
    capsys.readouterr()
    assert run_cli(["status", str(path)]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "items asked of people" in line]
    assert f"│ {len(asked)} (1 labelled; 1 labels in all)" in line
    # people are named in judging.people, never called as a judge; a model is not people
    for judges, message in (('["human"]', 'is people (kind = "human")'), ('["local-openai"]\npeople = "local-openai"', "is a model")):
        bad = write_config(tmp_path, "http://127.0.0.1:9/v1", name="bad", prompts=prompts, responses=responses, judges=judges)
        assert run_cli(["run", str(bad), "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
