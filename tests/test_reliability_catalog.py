"""Reliability, second campaign (issue #16): a catalog of hostile inputs and sloppy providers, by
class of defect. Every case runs the real ``orchestrator`` command in a child process, on real
files, against a real HTTP judge server on 127.0.0.1, and checks what a user would see: the exit
code, one clear line (never a traceback), and that nothing stored was lost or changed.

Classes: 1 outputs that destroy inputs, 2 non-finite numbers, 3 success reported on failure,
4 late validation, 5 display injection, 6 locks and storage, 7 secrets, 8 small hangs and silences.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import childkit
import pytest

from judgekit import quality_behaviour, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer, completion, logprob_entry

pytestmark = pytest.mark.slow


@dataclass
class Case:
    """One catalog entry: run ``args`` (``{run}``, ``{dir}`` … filled in) and check the outcome."""

    klass: int
    name: str
    args: list[str]
    code: int = 2
    message: str = ""
    """Must appear (case-insensitive) in stderr (or stdout when ``code`` is 0 and ``stdout`` is set)."""
    setup: Callable[[dict], None] | None = None
    check: Callable[[dict, subprocess.CompletedProcess], str | None] | None = None
    """Extra check: returns a complaint, or None when all is well."""
    env: dict[str, str] = field(default_factory=dict)
    preexec: Callable[[], None] | None = None
    readonly: bool = False
    """Needs read-only storage (``{ro}``), which the test makes with a read-only mount or chattr."""
    one_line: bool = True
    """stderr holds exactly one non-blank line (errors); warnings and progress may add lines otherwise."""
    no_run_file: str | None = None
    """This run file must not exist afterwards (validation before creation)."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "-"


# -- judges that misbehave -------------------------------------------------------------------------


def _pairwise(body, *, alts=None, usage=None, text=None):
    status, headers, payload = quality_behaviour(body)
    if alts is not None:
        payload["choices"][0]["logprobs"] = {"content": [{"token": "A", "logprob": -0.1, "top_logprobs": alts}]}
    if usage is not None:
        payload["usage"] = usage
    if text is not None:
        payload["choices"][0]["message"]["content"] = text
        payload["choices"][0].pop("logprobs", None)
    return status, headers, payload


def nan_logprobs(body):
    """Half the alternatives are NaN: the valid ones still give the answer."""
    return _pairwise(body, alts=[{"token": "A", "logprob": float("nan")}, {"token": "B", "logprob": -1.2}, {"token": "A", "logprob": -0.4}])


def all_nan_logprobs(body):
    """Every log-probability NaN, the text says "A": the verdict is parsed, nothing NaN stored."""
    payload = completion(
        "A",
        [
            {
                "token": "A",
                "logprob": float("nan"),
                "top_logprobs": [{"token": "A", "logprob": float("nan")}, {"token": "B", "logprob": float("nan")}],
            }
        ],
    )
    return 200, {}, payload


def huge_logprobs(body):
    return _pairwise(
        body,
        alts=[
            {"token": "A", "logprob": 1e308},
            {"token": "B", "logprob": float("inf")},
            {"token": "A", "logprob": -0.3},
            {"token": "B", "logprob": -1.5},
        ],
    )


def negative_usage(body):
    return _pairwise(body, usage={"prompt_tokens": -1_000_000, "completion_tokens": -5, "total_tokens": -1_000_005})


def absurd_usage(body):
    return _pairwise(body, usage={"prompt_tokens": 10**15, "completion_tokens": 10**13, "total_tokens": 10**15})


def low_mass(body):
    """Most probability on a non-option token ("I"): renormalised, and flagged."""
    return _pairwise(body, alts=[{"token": "I", "logprob": -0.05}, {"token": "A", "logprob": -3.5}, {"token": "B", "logprob": -4.0}])


def chatty(body):
    """Never an option: every answer is unparsed."""
    return 200, {}, completion("I would rather not say.", [logprob_entry("I", [("I", 0.9), ("We", 0.1)])])


def bad_request(body):
    return 400, {}, {"error": {"message": "this model does not exist"}}


def retry_after(value: str):
    seen = {}

    def behaviour(body):
        key = json.dumps(body.get("messages"))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 1:
            return 429, {"Retry-After": value}, {"error": {"message": "slow down"}}
        return quality_behaviour(body)

    return behaviour


def echo(secret: str):
    def behaviour(body):
        status, headers, payload = quality_behaviour(body)
        payload["choices"][0]["message"]["content"] += f" (I was told {secret})"
        return status, headers, payload

    return behaviour


BEHAVIOURS = {
    "nan": nan_logprobs,
    "all_nan": all_nan_logprobs,
    "huge": huge_logprobs,
    "neg_usage": negative_usage,
    "absurd_usage": absurd_usage,
    "low_mass": low_mass,
    "chatty": chatty,
    "bad_request": bad_request,
    "ra_nan": retry_after("nan"),
    "ra_inf": retry_after("inf"),
    "ra_huge": retry_after("1e300"),
    "echo_auth": echo("tok-FOO-AUTH-5e2b7"),
    "echo_pass": echo("pw-MY-PASS-91x"),
    "echo_odd": echo("oddly-named-secret-77"),
    "echo_url": echo("urlpass-42q"),
}


# -- the world every case runs in -------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("catalog")
    os.chmod(root, 0o755)
    servers = {name: FakeOpenAIServer(b).__enter__() for name, b in BEHAVIOURS.items()}
    good = FakeOpenAIServer(quality_behaviour).__enter__()
    prompts, responses = write_dataset(root / "data", prompts=2, candidates=4)
    judges = write_judge(root / "judges", "local-openai")
    write_judge(judges, "priced-openai", price_input_per_mtok=5.0, price_output_per_mtok=15.0)
    (judges / "unpriced-openai.toml").write_text(  # no price here, none known to litellm, not a local address
        'name = "unpriced-openai"\nmodel = "openai/gpt-unknown-model-x"\napi_base = "https://judge.example.invalid/v1"\nprefill = true\n'
    )
    write_judge(judges, "nanprice-openai").joinpath("nanprice-openai.toml").write_text(
        'name = "nanprice-openai"\nmodel = "openai/x"\nprice_input_per_mtok = nan\n'
    )
    write_judge(judges, "negtimeout-openai", timeout_s=-1)
    write_judge(judges, "oddkey-openai", api_key_env="ODDLY_NAMED")
    write_judge(judges, "nostart-openai", embedded="no-such-model")
    env = {
        "ORCHESTRATOR_JUDGES": str(judges),
        "FOO_AUTH": "tok-FOO-AUTH-5e2b7",
        "MY_PASS": "pw-MY-PASS-91x",
        "ODDLY_NAMED": "oddly-named-secret-77",
        "ORCHESTRATOR_LOG_DIR": str(root / "crash-logs"),
    }
    w = {"root": root, "prompts": prompts, "responses": responses, "good": good.url, "servers": servers, "env": env}

    def config(name, url: str | None = "good", **kw):
        """A run config against ``url`` (``"good"``: the well-behaved server; None: no api_base)."""
        return write_config(root, good.url if url == "good" else url, name=name, prompts=prompts, responses=responses, **kw)

    w["config"] = config
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    undo: Callable[[], None] = lambda: None  # noqa: E731
    try:
        base, _ = api.start(config("base", max_calls=24))
        other, _ = api.start(config("other", max_calls=8))
        w["run"], w["other"] = base, other
        w["log"] = root / "base.jsonl"
        api.export(base, out=w["log"], fmt="jsonl")
        w["ro"], undo = _readonly_storage(base)
        yield w
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for server in [*servers.values(), good]:
            server.__exit__(None, None, None)
        undo()


def _fill(arg: str, w: dict) -> str:
    return (
        arg.replace("{run}", str(w["run"]))
        .replace("{other}", str(w["other"]))
        .replace("{dir}", str(w["root"]))
        .replace("{prompts}", str(w["prompts"]))
        .replace("{responses}", str(w["responses"]))
        .replace("{log}", str(w["log"]))
        .replace("{ro}", str(w["ro"] or ""))
    )


def run_case(case: Case, w: dict) -> str | None:
    """Run one case; a complaint, or None when it behaved."""
    if case.setup is not None:
        case.setup(w)
    watched = [w["run"], w["other"], w["prompts"], w["responses"], w["log"]]
    before = {p: _sha(p) for p in watched}
    env = {**os.environ, **w["env"], **case.env, "PYTHONUNBUFFERED": "1"}
    proc = childkit.run(
        [*[_fill(a, w) for a in case.args]], capture_output=True, text=True, timeout=180, env=env, cwd=w["root"], preexec_fn=case.preexec
    )
    err = proc.stderr
    # progress lines ("[m:ss] round ...", printed every 10 s when stderr is not a terminal) are not
    # part of an error's one line
    lines = [line for line in err.splitlines() if line.strip() and not re.match(r"^\[\d+:\d\d\] ", line)]
    problems = []
    if proc.returncode != case.code:
        problems.append(f"exit {proc.returncode}, expected {case.code}")
    if "Traceback" in err or "Traceback" in proc.stdout:
        problems.append("a traceback")
    if case.code != 0 and case.one_line and len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines")
    if case.message and case.message.lower() not in (err + proc.stdout).lower():
        problems.append(f"no {case.message!r} in the output")
    if case.no_run_file and (w["root"] / "runs" / f"{case.no_run_file}.sqlite").exists():
        problems.append("a run file was created")
    changed = [str(p) for p in watched if _sha(p) != before[p] and p.exists()]
    if changed:
        problems.append(f"changed {changed}")
    if not problems and case.check is not None:
        complaint = case.check(w, proc)
        if complaint:
            problems.append(complaint)
    if problems:
        return f"[{case.klass}] {case.name}: {'; '.join(problems)} | stderr: {err[-600:]!r}"
    return None


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


def _readonly_storage(run: Path) -> tuple[Path | None, Callable[[], None]]:
    """A copy of ``run`` on read-only storage: a tmpfs remounted read-only (root), else a folder
    made immutable with ``chattr +i``; (None, no-op) where neither is possible here."""
    folder = Path(tempfile.mkdtemp(prefix="orchestrator-ro-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(folder)], capture_output=True).returncode == 0
    shutil.copy(run, folder / "base.sqlite")
    if mounted and subprocess.run(["mount", "-o", "remount,ro", str(folder)], capture_output=True).returncode == 0:

        def undo() -> None:
            subprocess.run(["umount", str(folder)], capture_output=True)
            shutil.rmtree(folder, ignore_errors=True)

        return folder, undo
    if mounted:
        subprocess.run(["umount", str(folder)], capture_output=True)
        shutil.copy(run, folder / "base.sqlite")
    if subprocess.run(["chattr", "+i", str(folder / "base.sqlite"), str(folder)], capture_output=True).returncode == 0:

        def undo() -> None:
            subprocess.run(["chattr", "-i", str(folder / "base.sqlite"), str(folder)], capture_output=True)
            shutil.rmtree(folder, ignore_errors=True)

        return folder, undo
    shutil.rmtree(folder, ignore_errors=True)
    return None, lambda: None


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


def _names_dataset(names):
    rows_p = [{"id": "p1", "text": "An article."}]
    rows_r = [
        json.dumps({"prompt_id": "p1", "candidate": n, "text": f"Summary <<q={0.1 + 0.2 * k:.2f}>>", "human": {"coherence": 0.1 + 0.2 * k}})
        for k, n in enumerate(names)
    ]
    return rows_p, rows_r


def _names_run(folder, names):
    def setup(w):
        _dataset(folder, *_names_dataset(names))(w)
        write_config(
            w["root"],
            w["good"],
            name=folder,
            prompts=w["root"] / folder / "prompts.jsonl",
            responses=w["root"] / folder / "responses.jsonl",
            max_calls=12,
        )

    return setup


def _shows_names(folder, names):
    def check(w, proc):
        env = {**os.environ, **w["env"]}
        run = w["root"] / "runs" / f"{folder}.sqlite"
        outputs = [proc.stdout]
        for args in (["rank", str(run)], ["status", str(run)]):
            p = childkit.run([*args], capture_output=True, text=True, env={**env, "COLUMNS": "200"}, cwd=w["root"])
            if p.returncode:
                return f"{args[0]} failed: {p.stderr[-200:]}"
            outputs.append(p.stdout)
        missing = [n for n in names if n not in outputs[1]]
        return f"rank does not show {missing}" if missing else None

    return check


def catalog() -> list[Case]:
    c: list[Case] = []
    # 1. outputs that destroy inputs -------------------------------------------------------------
    c += [
        Case(1, "export over the run file itself", ["export", "{run}", "--out", "{run}"], 2, "which this command reads"),
        Case(1, "export over the run file's -wal", ["export", "{run}", "--out", "{run}-wal"], 2, "which this command reads"),
        Case(
            1,
            "export through a symlink to the run file",
            ["export", "{run}", "--out", "{dir}/link-to-run"],
            2,
            "which this command reads",
            setup=_link("link-to-run", "run"),
        ),
        Case(
            1,
            "export to a hard link of the run file",
            ["export", "{run}", "--out", "{dir}/hard-run"],
            2,
            "which this command reads",
            setup=_hardlink("hard-run", "run"),
        ),
        Case(1, "export over another run file", ["export", "{run}", "--out", "{other}"], 2, "SQLite database"),
        Case(1, "export to a directory", ["export", "{run}", "--out", "{dir}"], 2, "is a directory", check=_no_partials),
        Case(1, "export to a missing folder", ["export", "{run}", "--out", "{dir}/nope/x.jsonl"], 2, "does not exist"),
        Case(1, "export csv over the run file", ["export", "{run}", "--format", "csv", "--out", "{run}"], 2, "reads"),
        Case(1, "export to - is stdout", ["export", "{run}", "--out", "-"], 0, check=_json_lines(10), one_line=False),
        Case(1, "export to /dev/stdout", ["export", "{run}", "--out", "/dev/stdout"], 0, check=_json_lines(10), one_line=False),
        Case(
            1,
            "export csv to -",
            ["export", "{run}", "--format", "csv", "--out", "-"],
            0,
            check=_stdout_starts(b"key,round,kind"),
            one_line=False,
        ),
        Case(
            1,
            "export through a symlink writes the target",
            ["export", "{run}", "--out", "{dir}/through.jsonl"],
            0,
            setup=_prep_through,
            check=_writes_through,
            one_line=False,
        ),
        Case(
            1,
            "record over the prompts file",
            [
                "record",
                "--prompts",
                "{prompts}",
                "--responses",
                "{responses}",
                "--first",
                "1",
                "--judge",
                "local-openai",
                "--api-base",
                "http://127.0.0.1:9",
                "--out",
                "{prompts}",
            ],
            2,
            "which this command reads",
        ),
        Case(
            1,
            "record over the responses file",
            [
                "record",
                "--prompts",
                "{prompts}",
                "--responses",
                "{responses}",
                "--first",
                "1",
                "--judge",
                "local-openai",
                "--api-base",
                "http://127.0.0.1:9",
                "--out",
                "{responses}",
            ],
            2,
            "which this command reads",
        ),
        Case(
            1,
            "record through a symlink to the dataset",
            [
                "record",
                "--prompts",
                "{prompts}",
                "--responses",
                "{responses}",
                "--first",
                "1",
                "--judge",
                "local-openai",
                "--out",
                "{dir}/link-to-responses",
            ],
            2,
            "which this command reads",
            setup=_link("link-to-responses", "responses"),
        ),
        Case(
            1,
            "simulate with one file for both outputs",
            ["simulate", "--out-log", "{dir}/s.jsonl", "--out-responses", "{dir}/s.jsonl"],
            2,
            "two different files",
        ),
        Case(1, "simulate into a directory", ["simulate", "--out-log", "{dir}", "--out-responses", "{dir}/r.jsonl"], 2, "is a directory"),
        Case(1, "replay --plot over its own log", ["replay", "{log}", "--plot", "{log}"], 2, "which this command reads"),
        Case(
            1,
            "replay --plot over the responses",
            ["replay", "{log}", "--responses", "{responses}", "--truth", "coherence", "--plot", "{responses}"],
            2,
            "which this command reads",
        ),
        Case(1, "fit raee --se-curve over the run file", ["fit", "raee", "{run}", "--se-curve", "{run}"], 2, "reads"),
    ]
    # 2. non-finite numbers ----------------------------------------------------------------------
    c += [
        _config_case(2, "expert beta nan", [('debias = "none"', 'debias = "none"\nexpert = "beta:nan,1"')], "expert"),
        _config_case(2, "expert beta inf", [('debias = "none"', 'debias = "none"\nexpert = "beta:1,inf"')], "expert"),
        _config_case(2, "max_usd nan", [("max_calls = 10", "max_calls = 10\nmax_usd = nan")], "max_usd", max_calls=10),
        _config_case(2, "backoff inf", [("backoff_max_s = 0.2", "backoff_max_s = inf")], "backoff_max_s"),
        _config_case(2, "stopping nan", [("[dispatch]", "[stopping]\nmax_adjacent_reorder = nan\n[dispatch]")], "max_adjacent_reorder"),
        _config_case(2, "judge price nan", [('judges = ["local-openai"]', 'judges = ["nanprice-openai"]')], "price_input_per_mtok"),
        _config_case(2, "judge negative timeout", [('judges = ["local-openai"]', 'judges = ["negtimeout-openai"]')], "timeout_s"),
        Case(
            2,
            "human score NaN",
            ["replay", "{log}", "--responses", "{dir}/nanh/responses.jsonl", "--truth", "coherence"],
            2,
            "finite",
            setup=_dataset("nanh", [], ['{"prompt_id": "p0", "candidate": "M0", "text": "x", "human": {"coherence": NaN}}']),
        ),
        Case(
            2,
            "human score Infinity in a run's data",
            ["run", "{dir}/infh.toml"],
            2,
            "finite",
            setup=lambda w: (
                _dataset(
                    "infh",
                    [{"id": "p1", "text": "t"}],
                    [
                        '{"prompt_id": "p1", "candidate": "a", "text": "x", "human": {"coherence": Infinity}}',
                        '{"prompt_id": "p1", "candidate": "b", "text": "y", "human": {"coherence": 1}}',
                    ],
                )(w),
                write_config(
                    w["root"],
                    w["good"],
                    name="infh",
                    prompts=w["root"] / "infh/prompts.jsonl",
                    responses=w["root"] / "infh/responses.jsonl",
                ),
            ),
            no_run_file="infh",
        ),
        Case(
            2,
            "human score 1e999",
            ["replay", "{log}", "--responses", "{dir}/bigh/responses.jsonl", "--truth", "coherence"],
            2,
            "finite",
            setup=_dataset("bigh", [], ['{"prompt_id": "p0", "candidate": "M0", "text": "x", "human": {"coherence": 1e999}}']),
        ),
        Case(
            2,
            "log probability NaN",
            ["replay", "{dir}/nanlog.jsonl"],
            2,
            "nan",
            setup=_write(
                "{dir}/nanlog.jsonl", '{"kind": "pairwise", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"A": NaN, "B": 0.5}}\n'
            ),
        ),
        Case(2, "fit simplex --delta nan", ["fit", "simplex", "--log", "{log}", "--levels", "5", "--delta", "nan,1,1,1,1"], 2, "finite"),
        Case(2, "rank --level nan", ["rank", "{run}", "--level", "nan"], 2, "finite"),
        Case(2, "fit raee --abstain-sd inf", ["fit", "raee", "{run}", "--abstain-sd", "inf"], 2, "finite"),
        Case(2, "fit raee --icc-threshold nan", ["fit", "raee", "{run}", "--icc-threshold", "nan"], 2, "finite"),
        Case(
            2,
            "provider NaN log-probabilities",
            ["run", "{dir}/prov_nan.toml"],
            0,
            setup=_edit_config("prov_nan", "nan", max_calls=8),
            check=_run_ok("prov_nan", note="invalid log-probabilities"),
            one_line=False,
        ),
        Case(
            2,
            "provider only NaN log-probabilities",
            ["run", "{dir}/prov_allnan.toml"],
            0,
            setup=_edit_config("prov_allnan", "all_nan", max_calls=8),
            check=_run_ok("prov_allnan", note="verdict"),
            one_line=False,
        ),
        Case(
            2,
            "provider +inf and 1e308 log-probabilities",
            ["run", "{dir}/prov_huge.toml"],
            0,
            setup=_edit_config("prov_huge", "huge", max_calls=8),
            check=_run_ok("prov_huge", note="invalid"),
            one_line=False,
        ),
        Case(
            2,
            "provider negative usage",
            ["run", "{dir}/prov_neg.toml"],
            0,
            setup=_edit_config("prov_neg", "neg_usage", max_calls=8),
            check=_run_ok("prov_neg", note="implausible usage"),
            one_line=False,
        ),
        Case(
            2,
            "provider absurd usage",
            ["run", "{dir}/prov_abs.toml"],
            0,
            setup=_edit_config("prov_abs", "absurd_usage", max_calls=8),
            check=_run_ok("prov_abs", note="implausible usage"),
            one_line=False,
        ),
        Case(
            2,
            "Retry-After: nan keeps the backoff cap",
            ["run", "{dir}/ra_nan.toml"],
            0,
            setup=_edit_config("ra_nan", "ra_nan", max_calls=8),
            check=_run_ok("ra_nan", attempts_over_one=True),
            one_line=False,
        ),
        Case(
            2,
            "Retry-After: inf keeps the backoff cap",
            ["run", "{dir}/ra_inf.toml"],
            0,
            setup=_edit_config("ra_inf", "ra_inf", max_calls=8),
            check=_run_ok("ra_inf", attempts_over_one=True),
            one_line=False,
        ),
        Case(
            2,
            "Retry-After: 1e300 is capped",
            ["run", "{dir}/ra_huge.toml"],
            0,
            setup=_edit_config("ra_huge", "ra_huge", max_calls=8),
            check=_run_ok("ra_huge", attempts_over_one=True),
            one_line=False,
        ),
    ]
    # 3. success reported on failure --------------------------------------------------------------
    c += [
        Case(
            3,
            "nothing listens at api_base",
            ["run", "{dir}/nobody.toml"],
            2,
            "the run failed",
            setup=_edit_config("nobody", "http://127.0.0.1:9", max_calls=60, extra="max_attempts = 1"),
            check=_failed_run("nobody", max_calls=60),
        ),
        Case(
            3,
            "every call answered 400",
            ["run", "{dir}/four00.toml"],
            2,
            "bad_request",
            setup=_edit_config("four00", "bad_request", max_calls=60),
            check=_failed_run("four00", max_calls=60),
        ),
        Case(
            3,
            "every answer unparsed",
            ["run", "{dir}/chatty.toml"],
            2,
            "unparsed",
            setup=_edit_config("chatty", "chatty", max_calls=60),
            check=_failed_run("chatty", max_calls=60),
        ),
        _config_case(
            3, "max_calls 1 with permutation debiasing", [('debias = "none"', 'debias = "permutation"')], "cannot pay for one", max_calls=1
        ),
        _config_case(3, "max_tokens 10", [("max_calls = 40", "max_calls = 40\nmax_tokens = 10")], "budget.max_tokens"),
        _config_case(
            3,
            "max_usd below one request",
            [('judges = ["local-openai"]', 'judges = ["priced-openai"]'), ("max_calls = 40", "max_calls = 40\nmax_usd = 0.0000001")],
            "budget.max_usd",
        ),
    ]
    # 4. late validation --------------------------------------------------------------------------
    c += [
        _config_case(
            4,
            "max_usd with an unpriced judge",
            [('judges = ["local-openai"]', 'judges = ["unpriced-openai"]'), ("max_calls = 40", "max_calls = 40\nmax_usd = 1.0")],
            "no price",
            url_key="none",
        ),
        Case(
            4,
            "dry run with an unpriced judge and max_usd",
            ["run", "{dir}/dry_unpriced.toml", "--dry-run"],
            2,
            "no price",
            setup=_edit_config(
                "dry_unpriced",
                "none",
                edits=[('judges = ["local-openai"]', 'judges = ["unpriced-openai"]'), ("max_calls = 40", "max_calls = 40\nmax_usd = 1.0")],
            ),
            no_run_file="dry_unpriced",
        ),
        Case(
            4,
            "dry run with a budget below one request",
            ["run", "{dir}/dry_tiny.toml", "--dry-run"],
            2,
            "cannot pay for one",
            setup=_edit_config("dry_tiny", max_calls=1, edits=[('debias = "none"', 'debias = "permutation"')]),
        ),
        _config_case(4, "seed 2**53", [("seed = 7", "seed = 9007199254740992")], "seed"),
        _config_case(4, "seed -1", [("seed = 7", "seed = -1")], "seed"),
        Case(
            4,
            "a judge that cannot start leaves no run file, twice",
            ["run", "{dir}/nostart.toml"],
            2,
            "embedded",
            setup=_edit_config("nostart", "none", max_calls=8, judges='["nostart-openai"]'),
            no_run_file="nostart",
            check=_same_error_again("nostart"),
        ),
    ]
    # 5. display injection ------------------------------------------------------------------------
    markup = ["[/]", "[bold]x[/bold]", ":smile:", "[link=http://x]y[/link]"]
    c += [
        Case(
            5,
            "rich markup and emoji codes as candidate names",
            ["run", "{dir}/markup.toml"],
            0,
            setup=_names_run("markup", markup),
            check=_shows_names("markup", markup),
            one_line=False,
        ),
        Case(
            5,
            "control character in a candidate name",
            ["run", "{dir}/ctrl.toml"],
            2,
            "control character",
            setup=lambda w: (
                _dataset("ctrl", *_names_dataset(["a\u001fb", "c"]))(w),
                write_config(
                    w["root"],
                    w["good"],
                    name="ctrl",
                    prompts=w["root"] / "ctrl/prompts.jsonl",
                    responses=w["root"] / "ctrl/responses.jsonl",
                ),
            ),
            no_run_file="ctrl",
        ),
        Case(
            5,
            "newline in a prompt id",
            ["run", "{dir}/nl.toml"],
            2,
            "control character",
            setup=lambda w: (
                _dataset(
                    "nl",
                    [{"id": "p\n1", "text": "t"}],
                    [
                        json.dumps({"prompt_id": "p\n1", "candidate": "a", "text": "x"}),
                        json.dumps({"prompt_id": "p\n1", "candidate": "b", "text": "y"}),
                    ],
                )(w),
                write_config(
                    w["root"], w["good"], name="nl", prompts=w["root"] / "nl/prompts.jsonl", responses=w["root"] / "nl/responses.jsonl"
                ),
            ),
            no_run_file="nl",
        ),
        Case(
            5,
            "control character in a log's candidate",
            ["replay", "{dir}/ctrl.jsonl"],
            2,
            "control character",
            setup=_write(
                "{dir}/ctrl.jsonl",
                json.dumps({"kind": "pairwise", "prompt_id": "p", "candidates": ["a\u0007", "b"], "probs": {"A": 0.5, "B": 0.5}}) + "\n",
            ),
        ),
        Case(
            5,
            "'::' in ids keeps items apart",
            ["replay", "{dir}/items.jsonl", "--scope", "items", "--json"],
            0,
            setup=_items_log,
            check=_items_distinct,
            one_line=False,
        ),
    ]
    # 6. locks and storage ------------------------------------------------------------------------
    c += [
        Case(
            6,
            "resume through a symlink while a writer holds the run",
            ["resume", "{dir}/link-to-other"],
            2,
            "in use",
            setup=_lock_holder(lambda w: w["root"] / "link-to-other", _link("link-to-other", "other")),
        ),
        Case(
            6,
            "resume after deleting the lock file while a writer holds the run",
            ["resume", "{other}"],
            2,
            "in use",
            setup=_lock_holder(lambda w: w["other"], lambda w: Path(str(w["other"]) + ".lock").unlink(missing_ok=True)),
        ),
        Case(
            6,
            "resume through a hard link while a writer holds the run",
            ["resume", "{dir}/hard-other"],
            2,
            "in use",
            setup=_lock_holder(lambda w: w["root"] / "hard-other", _hardlink("hard-other", "other")),
        ),
        Case(6, "status on read-only storage", ["status", "{ro}/base.sqlite"], 0, "finished", readonly=True, one_line=False),
        Case(6, "rank on read-only storage", ["rank", "{ro}/base.sqlite", "--json"], 0, "ranking", readonly=True, one_line=False),
        Case(
            6,
            "export from read-only storage to stdout",
            ["export", "{ro}/base.sqlite", "--out", "-"],
            0,
            readonly=True,
            check=_json_lines(10),
            one_line=False,
        ),
        Case(6, "resume on read-only storage", ["resume", "{ro}/base.sqlite"], 2, "read-only", readonly=True),
        Case(
            6,
            "a full disk during a run",
            ["run", "{dir}/full.toml"],
            2,
            "could not be written",
            setup=_full_disk_setup,
            preexec=_fsize_limit,
            check=_full_disk_check,
        ),
        Case(6, "status of a damaged run file", ["status", "{dir}/corrupt.sqlite"], 2, "damaged", setup=_corrupt_copy),
        Case(
            6,
            "export of a damaged run file",
            ["export", "{dir}/corrupt.sqlite", "--out", "{dir}/c.jsonl"],
            2,
            "damaged",
            setup=_corrupt_copy,
        ),
    ]
    # 7. secrets ----------------------------------------------------------------------------------
    c += [
        # (litellm cannot reach an address with credentials in it: the run fails fast, which is fine here)
        Case(
            7,
            "credentials in dispatch.api_base",
            ["run", "{dir}/creds.toml"],
            2,
            "the run failed",
            setup=_credentials_setup,
            check=_credentials_check,
        ),
        Case(
            7,
            "a *_AUTH variable echoed by the judge",
            ["run", "{dir}/sec_auth.toml"],
            0,
            setup=_edit_config("sec_auth", "echo_auth", max_calls=6),
            check=_secret_absent("sec_auth", "tok-FOO-AUTH-5e2b7"),
            one_line=False,
        ),
        Case(
            7,
            "a *_PASS variable echoed by the judge",
            ["run", "{dir}/sec_pass.toml"],
            0,
            setup=_edit_config("sec_pass", "echo_pass", max_calls=6),
            check=_secret_absent("sec_pass", "pw-MY-PASS-91x"),
            one_line=False,
        ),
        Case(
            7,
            "an oddly named api_key_env echoed by the judge",
            ["run", "{dir}/sec_odd.toml"],
            0,
            setup=_edit_config("sec_odd", "echo_odd", max_calls=6, judges='["oddkey-openai"]'),
            check=_secret_absent("sec_odd", "oddly-named-secret-77"),
            one_line=False,
        ),
        Case(
            7,
            "record redacts an echoed secret",
            [
                "record",
                "--prompts",
                "{prompts}",
                "--responses",
                "{responses}",
                "--first",
                "1",
                "--judge",
                "local-openai",
                "--absolute-template",
                "",
                "--out",
                "{dir}/rec.jsonl",
                "--api-base",
                "ECHO_AUTH",
            ],
            0,
            check=_record_redacted,
            one_line=False,
        ),
    ]
    # 8. small hangs and silences -----------------------------------------------------------------
    c += [
        Case(
            8,
            "record --concurrency 0",
            [
                "record",
                "--prompts",
                "{prompts}",
                "--responses",
                "{responses}",
                "--first",
                "1",
                "--out",
                "{dir}/r0.jsonl",
                "--concurrency",
                "0",
            ],
            2,
            "--concurrency",
        ),
        Case(
            8,
            "record --first -1",
            ["record", "--prompts", "{prompts}", "--responses", "{responses}", "--first", "-1", "--out", "{dir}/r1.jsonl"],
            2,
            "--first",
        ),
        Case(
            8,
            "record --first 0",
            ["record", "--prompts", "{prompts}", "--responses", "{responses}", "--first", "0", "--out", "{dir}/r2.jsonl"],
            2,
            "--first",
        ),
        Case(8, "judge serve --port -1", ["judge", "serve", "--port", "-1"], 2, "--port"),
        Case(8, "judge serve --port 70000", ["judge", "serve", "--port", "70000"], 2, "--port"),
        Case(
            8,
            "simulate --seed -3",
            ["simulate", "--out-log", "{dir}/sl.jsonl", "--out-responses", "{dir}/sr.jsonl", "--seed", "-3"],
            2,
            "--seed",
        ),
        Case(
            8,
            "duplicate log lines are counted once, with a word",
            ["replay", "{dir}/dup.jsonl", "--json"],
            0,
            "5 duplicate line",
            setup=_dup_log,
            check=_same_as_log,
            one_line=False,
        ),
        Case(
            8,
            "an answer mostly off the options is flagged",
            ["run", "{dir}/lowmass.toml"],
            0,
            setup=_edit_config("lowmass", "low_mass", max_calls=8),
            check=_run_ok("lowmass", note="low option mass"),
            one_line=False,
        ),
        Case(
            8,
            "an internal error: one line and a log with the traceback",
            ["run", "{dir}/crash.toml"],
            1,
            "internal error",
            setup=_edit_config("crash", max_calls=8),
            env={"ORCHESTRATOR_FAILPOINTS": "bogus"},
            check=_crash_log,
        ),
    ]
    return c


def test_the_catalog_has_at_least_sixty_cases_in_every_class():
    cases = catalog()
    assert len(cases) >= 60
    assert {case.klass for case in cases} == set(range(1, 9))
    assert len({case.name for case in cases}) == len(cases)


PARTS = 4
"""The catalog runs in this many tests (every ``PARTS``-th case each), so that xdist workers share it."""


@pytest.mark.parametrize("part", range(PARTS))
def test_reliability_catalog(world, part):
    """Every case: the right exit code, one clear line, no traceback, nothing stored changed."""
    cases = catalog()[part::PARTS]
    # the record-echo case needs the echo server's address
    for case in cases:
        case.args = [a.replace("ECHO_AUTH", world["servers"]["echo_auth"].url) for a in case.args]
    if world["ro"] is None:
        skipped = [c.name for c in cases if c.readonly]
        print(f"no read-only storage can be made here (mount, chattr): skipping {skipped}")
        cases = [c for c in cases if not c.readonly]
    lock_cases = [c for c in cases if c.klass == 6 and "writer holds" in c.name]
    parallel = [c for c in cases if c not in lock_cases]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda case: run_case(case, world), parallel))
    for case in lock_cases:  # one lock holder at a time
        results.append(run_case(case, world))
        for holder in world.pop("holders", []):
            holder.kill()
            holder.wait()
    failures = [r for r in results if r]
    print(f"{len(cases)} cases, {len(cases) - len(failures)} behaved, {time.monotonic() - started:.0f} s")
    assert failures == [], "\n".join(failures)


def test_a_second_interrupt_stops_cpu_bound_work_at_once(tmp_path):
    """During a long posterior update (CPU-bound: the event loop cannot run its signal handlers)
    the first SIGINT starts the drain and a second one stops at once; the run resumes."""
    import signal

    data = write_dataset(tmp_path / "d", prompts=2, candidates=5)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="stall", prompts=data[0], responses=data[1], max_calls=20)
        env = {**os.environ, "ORCHESTRATOR_STALL": "refit:3"}  # a refit after the first round spins for 60 s
        proc = childkit.popen(["run", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        try:
            # on a loaded machine a progress line (one every 10 s without a terminal) can come first
            before = [proc.stderr.readline()]
            while before[-1] and "stalling at refit" not in before[-1] and len(before) < 50:
                before.append(proc.stderr.readline())
            assert "stalling at refit" in before[-1], before
            started = time.monotonic()
            proc.send_signal(signal.SIGINT)
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=30)
            took = time.monotonic() - started
            stderr = proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        run = tmp_path / "runs" / "stall.sqlite"
        state = sqlite3.connect(run).execute("select status from runs").fetchone()[0]
        resumed = childkit.run(["resume", str(run)], capture_output=True, text=True, timeout=120)
    assert code == 130 and took < 20 and "Traceback" not in stderr, (code, took, stderr)
    assert state == "interrupted"
    assert resumed.returncode == 0, resumed.stderr
    assert sqlite3.connect(run).execute("select count(*) from judgments where status = 'ok'").fetchone()[0] == 20
