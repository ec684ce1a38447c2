"""Test helpers for runs: a small dataset with hidden qualities, judge behaviours for the real-HTTP
test server that answer from those qualities, config files, and the fault and crash campaigns
(also used by benchmarks/reliability/reliability_campaign.py)."""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import childkit

from orchestrator import api
from orchestrator.judging.testserver import completion, logprob_entry

QUALITY = re.compile(r"<<q=([0-9.]+)>>")


def write_dataset(
    folder: Path,
    *,
    prompts: int = 3,
    candidates: int = 6,
    seed: int = 0,
    reference: float | None = None,
    base: list[float] | None = None,
    spread: float = 1.0,
) -> tuple[Path, Path]:
    """prompts.jsonl + responses.jsonl; each response text carries its hidden quality ``<<q=…>>``,
    also stored as the human ``coherence`` score. ``reference``: every prompt gets a reference text
    of that quality; ``base``: candidate c's quality is ``base[c]`` plus uniform noise of width ``spread``."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    p_path, r_path = folder / "prompts.jsonl", folder / "responses.jsonl"
    with p_path.open("w") as fp, r_path.open("w") as fr:
        for p in range(prompts):
            row = {"id": f"p{p}", "text": f"Article {p}: the council approved a library."}
            if reference is not None:
                row["reference"] = f"Reference summary <<q={reference:.4f}>>"
            fp.write(json.dumps(row) + "\n")
            for c in range(candidates):
                q = rng.random() if base is None else min(1.0, max(0.0, base[c] + spread * (rng.random() - 0.5)))
                fr.write(
                    json.dumps(
                        {"prompt_id": f"p{p}", "candidate": f"M{c}", "text": f"Summary {c} <<q={q:.4f}>>", "human": {"coherence": q}}
                    )
                    + "\n"
                )
    return p_path, r_path


def reference_behaviour(noise: dict[str, float] | None = None, slope: float = 6.0, first_bias: float = 0.0):
    """A/B/C judge for reference templates: P(B) ∝ σ(slope·(q_B − q_A) − first_bias), a tie mass
    that is largest for equal qualities (``first_bias`` > 0: the judge prefers whatever is shown
    first). ``noise`` (model → SD on the logit) makes each repeated ask of the same prompt a
    different, seeded draw (for ICC); other kinds as :func:`quality_behaviour`."""
    noise = noise or {}
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def behaviour(body: dict):
        text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
        qs = [float(x) for x in QUALITY.findall(text)]
        if '"C"' not in text or len(qs) < 2:
            return quality_behaviour(body)
        with lock:
            draw = seen.get(text + body.get("model", ""), 0)
            seen[text + body.get("model", "")] = draw + 1
        sd = noise.get(body.get("model", ""), 0.0)
        eps = random.Random(f"{text}|{body.get('model')}|{draw}").gauss(0.0, sd) if sd else 0.0
        p = 1 / (1 + math.exp(-(slope * (qs[1] - qs[0]) - first_bias + eps)))
        tie = 0.2 * math.exp(-(((qs[1] - qs[0]) * 5) ** 2))
        probs = {"A": (1 - tie) * (1 - p) * 0.98, "B": (1 - tie) * p * 0.98, "C": tie * 0.98}
        top = max(probs, key=probs.get)
        return 200, {}, completion(top, [logprob_entry(top, [*probs.items(), ("\n", 0.02)])])

    return behaviour


def quality_behaviour(body: dict):
    """Pairwise: P(A) = σ(6·(q_A − q_B)) as top logprobs; absolute: a peaked 1–10 distribution."""
    text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
    qs = [float(x) for x in QUALITY.findall(text)]
    if len(qs) >= 2:
        p = 1 / (1 + math.exp(-6 * (qs[0] - qs[1])))
        top = "A" if p >= 0.5 else "B"
        return 200, {}, completion(top, [logprob_entry(top, [("A", 0.98 * p), ("B", 0.98 * (1 - p)), ("\n", 0.02)])])
    level = min(9, max(1, round(1 + 8 * (qs[0] if qs else 0.5))))
    alts = [(str(level), 0.6)] + [(str(k), 0.4 / 8) for k in range(1, 10) if k != level]
    return 200, {}, completion(str(level), [logprob_entry(str(level), alts)])


DELIVERED = ("ok", "no_logprobs", "slow_stream")
"""Server outcomes that deliver a usable answer."""


def campaign_summary(path, server) -> dict:
    """What a fault campaign must show: every request ended, nothing lost, nothing paid twice."""
    db = sqlite3.connect(path)
    requests = dict(db.execute("select key, status from requests"))
    judgments = {k: (s, t, a) for k, s, t, a in db.execute("select key, status, error_type, attempts from judgments")}
    billable = server.billable()
    committed_at = dict(db.execute("select key, created_at from judgments"))
    return {
        "requests": len(requests),
        "unfinished": [k for k, s in requests.items() if s == "pending" or k not in judgments],
        "failed": {k: t for k, (s, t, _) in judgments.items() if s == "failed"},
        "failed_without_reason": [k for k, (s, t, _) in judgments.items() if s == "failed" and not t],
        # a full answer was delivered on the key's last request but no judgment says "ok"
        "lost": [
            k for k in requests if server.outcomes.get(k) and server.outcomes[k][-1] in DELIVERED and judgments.get(k, ("",))[0] != "ok"
        ],
        "paid_twice": [k for k, n in billable.items() if n > 1],
        "asked_after_commit": [k for t, k in server.arrivals if k in committed_at and t > committed_at[k]],
        "retries": sum(a - 1 for _, _, a in judgments.values()),
        "injected": dict(server.plan.injected) if server.plan else {},
    }


def committed_judgments(path) -> int:
    if not path.exists():  # (sqlite3.connect would create an empty file)
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("select count(*) from judgments").fetchone()[0]
    except sqlite3.OperationalError:  # created but the schema is not written yet
        return 0
    finally:
        conn.close()


def crash_campaign(tmp_path, server, data, *, plan: list[str], max_calls: int, seed: int = 5) -> dict:
    """Run a campaign of kills: each entry of ``plan`` is a failpoint ``name:N`` (SIGKILL inside an
    SQLite transaction or the posterior update), ``random`` (SIGKILL after a random number of new
    judgments plus a random fraction of a round) or ``startup`` (within the first second, before or
    while the run file is created); after each kill the run is resumed. Returns what the campaign
    must show, next to an uninterrupted run of the same config."""
    rng = random.Random(seed)
    common = dict(prompts=data[0], responses=data[1], max_calls=max_calls, batch=4, concurrency=4, budget_extra=STOP_AT_BUDGET)
    reference, _ = api.start(write_config(tmp_path, server.url, name="reference", **common))
    victim = tmp_path / "runs" / "victim.sqlite"
    command = ["run", str(write_config(tmp_path, server.url, name="victim", **common))]
    kills, at = [], []
    for entry in plan:
        env = dict(os.environ)
        env.pop("ORCHESTRATOR_FAILPOINTS", None)
        if entry != "random":
            env["ORCHESTRATOR_FAILPOINTS"] = entry
        proc = childkit.popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        if entry == "startup":  # before or while the run file is created
            time.sleep(rng.uniform(0.2, 1.0))
            if proc.poll() is None:
                proc.kill()
        elif entry == "random":
            target = committed_judgments(victim) + rng.randint(1, 8)
            deadline = time.monotonic() + 60
            while committed_judgments(victim) < target and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.15))
            if proc.poll() is None:
                proc.kill()
        proc.wait(timeout=120)
        if proc.returncode == -signal.SIGKILL:
            kills.append(entry)
            at.append(committed_judgments(victim))
        if victim.exists():
            command = ["resume", str(victim)]
    env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_FAILPOINTS"}
    final = childkit.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert final.returncode == 0, final.stderr
    db = sqlite3.connect(victim)

    def asked(path):
        conn = sqlite3.connect(path)
        return sorted(conn.execute("select judge, prompt_id, candidates from judgments where status = 'ok'"))

    committed_at = dict(db.execute("select key, created_at from judgments"))
    return {
        "kills": kills,
        "judgments_at_kill": at,
        "integrity": db.execute("PRAGMA integrity_check").fetchone()[0],
        "same_as_uninterrupted": asked(victim) == asked(reference),
        "unfinished": db.execute("select count(*) from requests where status = 'pending'").fetchone()[0],
        "asked_after_commit": [k for t, k in server.arrivals if k in committed_at and t > committed_at[k]],
        "calls": api.status(victim).as_dict()["spent"]["calls"],
        # answers that arrived but died with the process before their commit: asked again on resume
        # (same idempotency key); a provider or proxy that honours the key would not charge twice
        "reasked_uncommitted": sum(1 for k, n in server.billable().items() if n > 1),
    }


def run_cli(args: list[str]) -> int:
    """Exit code of ``orchestrator ARGS`` run in this process (0 when it returns normally)."""
    from orchestrator.cli import main

    try:
        main(args)
    except SystemExit as exc:
        return exc.code or 0
    return 0


def likert_behaviour(judges: dict[str, tuple[float, float]] | None = None):
    """Absolute 1–5 judge (prompts that ask "between 1 and 5"): the level is ``1 + 4·(q + shift + ε)``
    rounded and clipped, ε ~ N(0, sd) seeded by the prompt and model — ``judges`` maps the model to
    ``(sd, shift)`` (a noisy or lenient judge); the distribution puts 0.7 on that level. Other
    requests as :func:`reference_behaviour`/:func:`quality_behaviour`."""
    judges = judges or {}
    fallback = reference_behaviour()

    def behaviour(body: dict):
        text = " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "user")
        qs = [float(x) for x in QUALITY.findall(text)]
        if "between 1 and 5" not in text or len(qs) != 1:
            return fallback(body)
        sd, shift = judges.get(body.get("model", ""), (0.05, 0.0))
        eps = random.Random(f"{text}|{body.get('model')}").gauss(0.0, sd) if sd else 0.0
        level = min(5, max(1, round(1 + 4 * (qs[0] + shift + eps))))
        alts = [(str(level), 0.7)] + [(str(k), 0.28 / 4) for k in range(1, 6) if k != level] + [("\n", 0.02)]
        return 200, {}, completion(str(level), [logprob_entry(str(level), alts)])

    return behaviour


def write_judge(folder: Path, name: str, **fields) -> Path:
    """A judge profile for the test server in ``folder`` (created): ``openai/<name without -openai>``
    with top-20 logprobs, prefill and price 0 unless ``fields`` say otherwise. Returns ``folder``,
    for ``ORCHESTRATOR_JUDGES``."""
    folder.mkdir(exist_ok=True)
    profile = {
        "name": name,
        "model": f"openai/{name.removesuffix('-openai')}",
        "logprobs": True,
        "top_logprobs": 20,
        "prefill": True,
        "price_input_per_mtok": 0.0,
        "price_output_per_mtok": 0.0,
        **fields,
    }
    (folder / f"{name}.toml").write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in profile.items()))
    return folder


STOP_AT_BUDGET = '[stopping]\nrule = "budget"\n'
"""`budget_extra` for a run that must spend its whole budget: the quality-following test judge's
probabilities are exact, so its precision is read as high and the stopping rule would end the run
first (the precision estimate)."""


def write_config(
    folder: Path,
    api_base: str | None,
    *,
    name: str = "test",
    prompts: Path,
    responses: Path,
    extra: str = "",
    judges: str = '["local-openai"]',
    batch: int = 4,
    max_calls: int | None = 40,
    concurrency: int = 4,
    strategy: str = "reorder",
    scope: str = "per_prompt",
    debias: str = "none",
    warm_start: bool = False,
    budget_extra: str = "",
    reference: str = "",
    absolute: str | None = None,
) -> Path:
    """A run config (TOML) pointing at a test server."""
    budget = f"max_calls = {max_calls}\n" if max_calls is not None else ""
    text = f"""
name = "{name}"
seed = 7
runs_dir = "{(folder / "runs").as_posix()}"
[data]
prompts = "{prompts.as_posix()}"
responses = "{responses.as_posix()}"
scope = "{scope}"
truth = "coherence"
[judging]
judges = {judges}
[model]
debias = "{debias}"
absolute_warm_start = {str(warm_start).lower()}
[selection]
strategy = "{strategy}"
batch = {batch}
[budget]
{budget}{budget_extra}
[dispatch]
concurrency = {concurrency}
backoff_initial_s = 0.01
backoff_max_s = 0.2
{f'api_base = "{api_base}"' if api_base else ""}
{extra}
{("[reference]" + chr(10) + reference) if reference else ""}
{("[absolute]" + chr(10) + absolute) if absolute is not None else ""}
"""
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def length_controlled_run(folder: Path, *, name: str, max_calls: int, warm_start: bool = False) -> tuple[Path, list[dict]]:
    """A global run with ``model.control = ["length"]`` against the quality-following test server,
    on 4 prompts × 5 candidates whose answers differ in length (``warm_start``: every answer also
    scored 1–10 first). Returns the run file and the responses' rows."""
    from orchestrator.judging.testserver import FakeOpenAIServer

    prompts, responses = write_dataset(folder / "data", prompts=4, candidates=5, seed=3)
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    for k, row in enumerate(rows):  # answers of different lengths
        row["text"] += " and more words" * (k % 4)
    responses.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            folder, server.url, name=name, prompts=prompts, responses=responses, scope="global", max_calls=max_calls, warm_start=warm_start
        )
        config.write_text(config.read_text().replace("[model]\n", '[model]\ncontrol = ["length"]\n'))
        path, _ = api.start(config)
    return path, rows


def board_and_newcomer(tmp_path: Path) -> tuple[Path, Path, Path]:
    """40 prompts; 8 models of spread-out quality (the board's responses) and a newcomer M8 in their
    range (its responses apart): ``(prompts, board responses, newcomer's responses)``."""
    base = [0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.6]
    prompts, responses = write_dataset(tmp_path / "data", prompts=40, candidates=9, seed=4, reference=0.5, base=base, spread=0.5)
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    board_responses, new_responses = tmp_path / "board.jsonl", tmp_path / "new.jsonl"
    board_responses.write_text("".join(json.dumps(r) + "\n" for r in rows if r["candidate"] != "M8"))
    new_responses.write_text("".join(json.dumps(r) + "\n" for r in rows if r["candidate"] == "M8"))
    return prompts, board_responses, new_responses


def board_run(tmp_path: Path, server) -> tuple[Path, Path, Path]:
    """A board run (8 models judged on all 40 prompts of :func:`board_and_newcomer`, soft outcomes)
    against ``server``: ``(prompts, newcomer's responses, board run file)``."""
    from orchestrator import api

    prompts, board_responses, new_responses = board_and_newcomer(tmp_path)
    config = write_config(
        tmp_path, server.url, name="board", prompts=prompts, responses=board_responses, max_calls=None, reference="soft = true\n"
    )
    board, _ = api.start(config)
    return prompts, new_responses, board


def placed_config(
    tmp_path: Path, url: str, prompts: Path, responses: Path, board: str, *, name: str = "placed", max_calls: int = 24, **kwargs
) -> Path:
    """A reference campaign that places ``responses``' candidates on the ``board`` (a path as the
    config says it: absolute or relative to the config)."""
    return write_config(
        tmp_path,
        url,
        name=name,
        prompts=prompts,
        responses=responses,
        max_calls=max_calls,
        reference=f'soft = true\nboard = "{board}"\n',
        **kwargs,
    )


def reference_run(tmp_path, server, *, reference_toml, prompts=4, candidates=6, name="ref", **kwargs):
    """A reference campaign on a fresh dataset against ``server`` (two judges, one item a round unless
    ``kwargs`` say otherwise; the rest of ``kwargs`` shape the dataset): ``(run file, stop reason)``."""
    from orchestrator import api

    run = {k: kwargs.pop(k) for k in ("max_calls", "judges", "batch") if k in kwargs}
    run = {"max_calls": None, "judges": '["local-openai", "noisy-openai"]', "batch": 1, **run}
    data = write_dataset(tmp_path / f"data-{name}", prompts=prompts, candidates=candidates, **kwargs)
    config = write_config(tmp_path, server.url, name=name, prompts=data[0], responses=data[1], reference=reference_toml, **run)
    return api.start(config)


def call_label_server(url: str, body: dict | bytes | None = None, headers: dict | None = None) -> tuple[int, dict]:
    """The labelling server's answer (status, JSON) to a GET, or a POST of ``body`` (a dict as JSON, bytes as they are)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())
