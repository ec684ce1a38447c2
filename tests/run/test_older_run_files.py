"""Run files of every schema version the project still opens, with NULL where an older writer, another
tool or a person may have left one: every reader (status, rank, report, export, resume) reads them,
never as an internal error; NULL in a column that says what a row is refuses the file in one line,
exit 2, nothing changed."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from genkit import Writers, model_campaign
from judgekit import reference_behaviour, run_cli
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.store import SCHEMA_VERSION
from orchestrator.store.integrity import REQUIRED

ADDED = {
    6: [("runs", "stop_kind")],
    5: [("judgments", "stated")],
    4: [("judgments", "samples"), ("judgments", "completions"), ("requests", "reserved_calls")],
    3: [("judgments", "cached")],
    2: [("requests", "repeat"), ("judgments", "repeat")],
}
"""The columns each schema version added (what a file of the version before lacks)."""

SNAPSHOT = {"prompts", "responses"}
"""Tables the dataset fingerprint covers: a NULL there is an edit the fingerprint check refuses."""


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(Writers(judge=reference_behaviour())) as running:
        yield running


@pytest.fixture(scope="module")
def run_file(tmp_path_factory, server) -> Path:
    """A finished run with candidate models (one of them fails on one prompt) and texts."""
    folder = tmp_path_factory.mktemp("older")
    config = model_campaign(folder, server.url, name="old", max_calls=10, prompts=3, candidates=2)
    assert run_cli(["run", str(config), "--no-cache"]) == 0
    return folder / "runs" / "old.sqlite"


def as_version(source: Path, folder: Path, version: int) -> Path:
    """A copy of ``source`` as a run file of schema ``version`` would be: the later columns dropped."""
    path = folder / f"v{version}.sqlite"
    shutil.copy(source, path)
    db = sqlite3.connect(path)
    for later in range(SCHEMA_VERSION, version, -1):
        for table, column in ADDED[later]:
            db.execute(f"alter table [{table}] drop column [{column}]")
    db.execute(f"pragma user_version = {version}")
    db.commit()
    db.close()
    return path


def nullable(path: Path) -> list[tuple[str, str]]:
    """``(table, column)`` of every column a reader must take NULL in: not a key, not declared NOT
    NULL, not an identity column, not in the fingerprinted snapshot (and not a successful
    judgment's probabilities: tested on their own)."""
    db = sqlite3.connect(path)
    tables = [r[0] for r in db.execute("select name from sqlite_master where type = 'table'")]
    found = [
        (table, column)
        for table in tables
        if table not in SNAPSHOT
        for _, column, _, notnull, _, pk in db.execute(f"pragma table_info([{table}])")
        if not notnull and not pk and column not in REQUIRED.get(table, ()) and (table, column) != ("judgments", "probs")
    ]
    db.close()
    return found


def set_null(path: Path, cells: list[tuple[str, str]], rows: str = "") -> None:
    db = sqlite3.connect(path)
    for table, column in cells:
        db.execute(f"update [{table}] set [{column}] = NULL {rows}")
    db.commit()
    db.close()


def read_everything(path: Path, out: Path, capsys) -> dict[str, tuple[int, str]]:
    """Exit code and error line of every reader on ``path`` (status and rank also checked to print JSON)."""
    codes = {}
    for name, args in {
        "status": ["status", str(path), "--json"],
        "rank": ["rank", str(path), "--json"],
        "report": ["report", str(path), "--out", str(out / "report.html")],
        "export": ["export", str(path), "--out", str(out / "log.jsonl")],
        "export csv": ["export", str(path), "--format", "csv", "--out", str(out / "log.csv")],
        "export answers": ["export", str(path), "--format", "answers", "--out", str(out / "answers.jsonl")],
    }.items():
        capsys.readouterr()
        code = run_cli(args)
        printed = capsys.readouterr()
        codes[name] = (code, printed.err.strip() if code else "")
        assert "internal error" not in printed.err, (name, printed.err)
        if code == 0 and name in ("status", "rank"):
            json.loads(printed.out)
    return codes


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_every_schema_version_with_null_in_every_nullable_column_is_read_and_resumed(version, run_file, tmp_path, capsys):
    path = as_version(run_file, tmp_path, version)
    cells = nullable(path)
    assert ("runs", "stop_reason") in cells and ("requests", "status") in cells and ("runs", "name") in cells
    set_null(path, cells)
    codes = read_everything(path, tmp_path, capsys)
    assert codes == dict.fromkeys(codes, (0, "")), codes
    capsys.readouterr()
    assert run_cli(["status", str(path), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    # the documented defaults: the file's stem, no stop reason, a state that is not stored
    assert status["name"] == path.stem and status["stop_reason"] == "" and status["state"] == "unknown"
    # a request's status reads from its judgment
    assert sum(status["requests"].values()) > 0 and None not in status["requests"]

    assert run_cli(["resume", str(path), "--no-cache"]) == 0
    assert "internal error" not in capsys.readouterr().err
    db = sqlite3.connect(path)
    assert db.execute("pragma user_version").fetchone()[0] == SCHEMA_VERSION  # migrated when opened for writing
    assert db.execute("select count(*) from requests where status is null").fetchone()[0] == 0
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"


def test_the_readers_agree_with_the_writer_on_what_a_null_request_status_means(run_file, tmp_path, capsys):
    path = tmp_path / "status.sqlite"
    shutil.copy(run_file, path)
    capsys.readouterr()
    assert run_cli(["status", str(path), "--json"]) == 0
    before = json.loads(capsys.readouterr().out)["requests"]
    set_null(path, [("requests", "status")])
    assert run_cli(["status", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["requests"] == before


@pytest.mark.parametrize("table, column", [(t, c) for t, columns in REQUIRED.items() for c in columns])
def test_null_in_an_identity_column_is_one_line_and_exit_2_with_nothing_changed(table, column, run_file, tmp_path, capsys):
    path = tmp_path / "broken.sqlite"
    shutil.copy(run_file, path)
    db = sqlite3.connect(path)
    db.execute("pragma foreign_keys = off")
    db.execute(f"update [{table}] set [{column}] = NULL where rowid = (select min(rowid) from [{table}])")
    db.commit()
    db.close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    for args in (["status", str(path), "--json"], ["rank", str(path)], ["export", str(path), "--out", str(tmp_path / "x.jsonl")],
                 ["resume", str(path), "--no-cache"], ["report", str(path), "--out", str(tmp_path / "r.html")]):  # fmt: skip
        capsys.readouterr()
        assert run_cli(args) == 2, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"{table}.{column} is NULL" in err and str(path) in err, err
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "r.html").exists()


def test_a_successful_judgment_without_probabilities_is_refused_in_one_line(run_file, tmp_path, capsys):
    path = tmp_path / "noprobs.sqlite"
    shutil.copy(run_file, path)
    set_null(path, [("judgments", "probs")], "where status = 'ok' and rowid = (select min(rowid) from judgments where status = 'ok')")
    capsys.readouterr()
    assert run_cli(["rank", str(path)]) == 2
    assert "1 successful judgment(s) have no option probabilities" in capsys.readouterr().err


def test_a_run_file_without_its_run_row_is_refused_in_one_line(run_file, tmp_path, capsys):
    path = tmp_path / "norun.sqlite"
    shutil.copy(run_file, path)
    db = sqlite3.connect(path)
    db.execute("delete from runs")
    db.commit()
    db.close()
    capsys.readouterr()
    assert run_cli(["status", str(path)]) == 2
    assert "no row for the run" in capsys.readouterr().err


@settings(max_examples=8, deadline=None, phases=[Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_nulls_at_random_in_nullable_cells_never_make_an_internal_error(data, run_file, tmp_path_factory, capsys):
    folder = tmp_path_factory.mktemp("random")
    version = data.draw(st.integers(1, SCHEMA_VERSION), label="version")
    path = as_version(run_file, folder, version)
    db = sqlite3.connect(path)
    cells = []
    for table, column in nullable(path):
        rowids = [r[0] for r in db.execute(f"select rowid from [{table}]")]
        if rowids:
            chosen = data.draw(st.lists(st.sampled_from(rowids), max_size=3, unique=True), label=f"{table}.{column}")
            cells += [(table, column, rowid) for rowid in chosen]
    for table, column, rowid in cells:
        db.execute(f"update [{table}] set [{column}] = NULL where rowid = ?", [rowid])
    db.commit()
    db.close()
    codes = read_everything(path, folder, capsys)
    assert codes == dict.fromkeys(codes, (0, "")), codes
