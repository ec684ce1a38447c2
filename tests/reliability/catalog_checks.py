"""The reliability catalog's checks and setups: what a case asserts beyond its exit code and
message, and what it prepares."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Callable

import childkit
from catalog_kit import Case
from catalog_world import _fill

from judgekit import write_config, write_dataset
from orchestrator import api

# -- helpers for checks ----------------------------------------------------------------------------


def _db(w, name):
    return sqlite3.connect(w["root"] / "runs" / f"{name}.sqlite")


def _no_partials(w, proc):
    left = [p.name for p in w["root"].rglob("*.partial")]
    return f"left {left}" if left else None


def _json_lines(min_lines):
    def check(w, proc):
        rows = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
        return None if len(rows) >= min_lines else f"stdout had {len(rows)} JSON lines"

    return check


def _run_ok(name, *, note=None, min_ok=1, finite=True, spend_ok=True, attempts_over_one=False):
    def check(w, proc):
        db = _db(w, name)
        ok = db.execute("select count(*) from judgments where status = 'ok'").fetchone()[0]
        if ok < min_ok:
            return f"{ok} ok judgments"
        if finite:
            for (probs,) in db.execute("select probs from judgments where status = 'ok'"):
                for reading in json.loads(probs):
                    if not all(isinstance(v, float) and v == v and abs(v) != float("inf") for v in reading.values()):
                        return f"non-finite probs stored: {probs}"
        if spend_ok:
            tok, usd = db.execute("select min(prompt_tokens), min(cost_usd) from judgments").fetchone()
            if tok is not None and (tok < 0 or usd < 0):
                return f"negative spend stored ({tok}, {usd})"
            top = db.execute("select max(prompt_tokens + completion_tokens) from judgments").fetchone()[0]
            if top is not None and top > 20_000_000:
                return f"absurd tokens stored ({top})"
        if note and not db.execute("select count(*) from judgments where note like ?", [f"%{note}%"]).fetchone()[0]:
            return f"no judgment notes {note!r}"
        if attempts_over_one and not db.execute("select max(attempts) from judgments").fetchone()[0] > 1:
            return "no retry happened"
        # the case itself ran in a child process; its export and replay run here (two more child
        # processes per case cost ≈ 7 CPU-s, most of it importing the stack again)
        out = w["root"] / f"{name}.jsonl"
        try:
            api.export(w["root"] / "runs" / f"{name}.sqlite", out=out)
            api.replay(out)
        except Exception as exc:  # noqa: BLE001 - any failure is the complaint
            return f"its export does not replay: {exc!r}"[:400]
        return None

    return check


def _failed_run(name, *, max_calls):
    def check(w, proc):
        db = _db(w, name)
        state = db.execute("select status from runs").fetchone()[0]
        calls = db.execute("select count(*) from judgments").fetchone()[0]
        if state != "failed":
            return f"state {state}"
        if calls >= max_calls:
            return f"spent the whole budget ({calls} calls)"
        if "spearman" in (proc.stdout + proc.stderr).lower():
            return "printed statistics from no data"
        status = childkit.run(
            ["status", str(w["root"] / "runs" / f"{name}.sqlite"), "--json"], capture_output=True, text=True, env={**os.environ, **w["env"]}
        )
        summary = json.loads(status.stdout)
        if summary["state"] != "failed" or "mean_spearman_vs_truth" in summary:
            return f"status says {summary['state']}, {summary.get('mean_spearman_vs_truth')}"
        return None

    return check


def _edit_config(name, url_key="good", **kw):
    def setup(w):
        url = (
            None
            if url_key == "none"
            else w["good"]
            if url_key == "good"
            else w["servers"][url_key].url
            if url_key in w["servers"]
            else url_key
        )
        edits = kw.pop("edits", []) if "edits" in kw else []
        path = w["config"](name, url, **{k: v for k, v in kw.items()})
        text = path.read_text()
        for old, new in edits:
            assert old in text, old
            text = text.replace(old, new)
        path.write_text(text)

    return setup


def _config_case(klass, name, edits, message, **kw):
    run_name = name.replace(" ", "_").replace(".", "")[:40]
    return Case(
        klass, name, ["run", f"{{dir}}/{run_name}.toml"], 2, message, setup=_edit_config(run_name, edits=edits, **kw), no_run_file=run_name
    )


def _write(path_key, text):
    def setup(w):
        Path(_fill(path_key, w)).write_text(text)

    return setup


def _dataset(folder, rows_prompts, rows_responses):
    def setup(w):
        d = w["root"] / folder
        d.mkdir(exist_ok=True)
        (d / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows_prompts))
        (d / "responses.jsonl").write_text("".join(r + "\n" for r in rows_responses))

    return setup


def _lock_holder(path_for: Callable[[dict], Path], also: Callable[[dict], None] | None = None):
    """Start a process that holds the run's writer lock (through ``path_for``) for the case."""

    def setup(w):
        if also is not None:
            also(w)
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                (
                    "import sys, time; from orchestrator.store import open_run; s = open_run(sys.argv[1]); "
                    "print('locked', flush=True); time.sleep(20)"
                ),
                str(w["other"]),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout.readline().strip() == "locked"
        w.setdefault("holders", []).append(holder)
        w["lock_target"] = path_for(w)

    return setup


def _corrupt_copy(w):
    target = w["root"] / "corrupt.sqlite"
    shutil.copy(w["run"], target)
    data = bytearray(target.read_bytes())
    for offset in range(4096 * 2, min(len(data), 4096 * 6), 7):  # smash pages 3-6, keep the header
        data[offset] = 0xA5
    target.write_bytes(bytes(data))


def _items_log(w):
    rows = [
        {"kind": "pairwise", "judge": "j", "prompt_id": "a::b", "candidates": ["c", "d"], "probs": {"A": 0.8, "B": 0.2}},
        {"kind": "pairwise", "judge": "j", "prompt_id": "a", "candidates": ["b::c", "d"], "probs": {"A": 0.3, "B": 0.7}},
    ]
    (w["root"] / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _items_distinct(w, proc):
    names = json.loads(proc.stdout)["rankings"]["items"]
    return None if len(names) == 4 and len(set(names)) == 4 else f"items merged: {names}"


def _dup_log(w):
    lines = w["log"].read_text().splitlines()
    (w["root"] / "dup.jsonl").write_text("\n".join(lines + lines[:5]) + "\n")


def _same_as_log(w, proc):
    ref = childkit.run(["replay", str(w["log"]), "--json"], capture_output=True, text=True, env={**os.environ, **w["env"]})
    mine = json.loads(proc.stdout)["rankings"]
    return None if mine == json.loads(ref.stdout)["rankings"] else "duplicates changed the ranking"


def _fsize_limit():
    limit = 160 * 1024  # the snapshot (~70 KB) fits; the requests and judgments do not
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _full_disk_setup(w):
    d = w["root"] / "big"
    write_dataset(d, prompts=3, candidates=8)
    for path in (d / "prompts.jsonl", d / "responses.jsonl"):
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        for r in rows:
            r["text"] = r["text"] + " " + "padding " * 60
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_config(w["root"], w["good"], name="full", prompts=d / "prompts.jsonl", responses=d / "responses.jsonl", max_calls=120, batch=8)


def _full_disk_check(w, proc):
    if "consistent" in proc.stderr:
        return "claimed consistency"
    run = w["root"] / "runs" / "full.sqlite"
    db = sqlite3.connect(run)
    if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
        return "integrity check failed"
    db.close()
    resumed = childkit.run(["resume", str(run)], capture_output=True, text=True, env={**os.environ, **w["env"]})
    if resumed.returncode != 0:
        return f"resume after freeing space failed: {resumed.stderr[-300:]}"
    return None


def _credentials_setup(w):
    url = w["good"].replace("http://", "http://alice:s3cr3t-pw-xyz@")
    w["config"]("creds", url, max_calls=40)


def _credentials_check(w, proc):
    run = w["root"] / "runs" / "creds.sqlite"
    if b"s3cr3t-pw-xyz" in run.read_bytes():
        return "the password is in the run file"
    env = {**os.environ, **w["env"]}
    db = sqlite3.connect(run)
    db.execute("update runs set status = 'interrupted'")
    db.commit()
    db.close()
    refused = childkit.run(["resume", str(run)], capture_output=True, text=True, env=env)
    if refused.returncode != 2 or "--api-base" not in refused.stderr:
        return f"resume without the address: {refused.returncode} {refused.stderr[-200:]}"
    again = childkit.run(["resume", str(run), "--api-base", w["good"]], capture_output=True, text=True, env=env)
    return None if again.returncode == 0 else f"resume --api-base failed: {again.stderr[-200:]}"


def _secret_absent(name, secret):
    def check(w, proc):
        run = w["root"] / "runs" / f"{name}.sqlite"
        if not run.exists():
            return "no run file"
        for path in [run, *w["root"].glob(f"runs/{name}.sqlite-wal")]:
            if secret.encode() in path.read_bytes():
                return f"{secret} stored in {path.name}"
        if secret in proc.stdout + proc.stderr:
            return "printed"
        db = sqlite3.connect(run)
        if not db.execute("select count(*) from judgments where text like '%REDACTED%'").fetchone()[0]:
            return "the echo was not redacted"
        return None

    return check


def _crash_log(w, proc):
    logs = list((w["root"] / "crash-logs").glob("orchestrator-crash-*.log"))
    if not logs or "Traceback" not in logs[0].read_text():
        return "no crash log with the traceback"
    return None if str(logs[0].parent) in proc.stderr else "the line does not name the log"


def _same_error_again(name):
    def check(w, proc):
        again = childkit.run(
            ["run", str(w["root"] / f"{name}.toml")], capture_output=True, text=True, env={**os.environ, **w["env"]}, cwd=w["root"]
        )
        if again.returncode != 2 or "already exists" in again.stderr or again.stderr != proc.stderr:
            return f"the second try said {again.stderr[-200:]!r}"
        return None

    return check


def _record_redacted(w, proc):
    text = (w["root"] / "rec.jsonl").read_text()
    return "echoed secret in the record log" if "tok-FOO-AUTH-5e2b7" in text else None


def _stdout_starts(prefix: bytes):
    def check(w, proc):
        return None if proc.stdout.encode("utf-8", "surrogateescape").startswith(prefix) else f"stdout {proc.stdout[:20]!r}"

    return check


def _link(name, target_key):
    def setup(w):
        link = w["root"] / name
        link.unlink(missing_ok=True)
        link.symlink_to(w[target_key] if target_key in w else Path(_fill(target_key, w)))

    return setup


def _hardlink(name, target_key):
    def setup(w):
        link = w["root"] / name
        link.unlink(missing_ok=True)
        os.link(w[target_key], link)

    return setup


def _writes_through(w, proc):
    link, target = w["root"] / "through.jsonl", w["root"] / "through-target.jsonl"
    if not link.is_symlink():
        return "the link was replaced"
    return None if len(target.read_text().splitlines()) >= 10 else "the target was not written"


def _prep_through(w):
    target = w["root"] / "through-target.jsonl"
    target.write_text("old\n")
    link = w["root"] / "through.jsonl"
    link.unlink(missing_ok=True)
    link.symlink_to(target)
