"""The reliability catalog's world: the servers, files and runs every case runs against, and
how one case is run and checked (exit code, one clear line, nothing stored changed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

import childkit
from catalog_kit import BEHAVIOURS, Case, _sha

from judgekit import quality_behaviour, write_config, write_dataset, write_judge
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer

# -- the world every case runs in -------------------------------------------------------------------


def make_world(tmp_path_factory):
    """The world (a generator: the test module's ``world`` fixture yields from it)."""
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
