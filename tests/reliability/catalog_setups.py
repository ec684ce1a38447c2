"""Setups and checks for the catalog's classes 9–15 (tests/reliability/test_catalog_cache_budgets_importers.py)."""

from __future__ import annotations

import json
import sqlite3

ROWS = [
    ("p1", "Write a poem.", "m1", "Roses, and more."),
    ("p1", "Write a poem.", "m2", "Violets."),
    ("p2", "Résumé ½ “quoted”", "m1", "An answer, with a comma."),
    ("p2", "Résumé ½ “quoted”", "m2", "Another."),
]


def _csv_text(sep=",", rows=ROWS) -> str:
    lines = [sep.join(["prompt_id", "prompt", "model", "response"])]
    for r in rows:
        lines.append(sep.join(f'"{v}"' if ("," in v or sep in v) else v for v in r))
    return "\n".join(lines) + "\n"


def _file(name: str, data: bytes | str):
    def setup(w):
        path = w["root"] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)

    return setup


def _both(*setups):
    def setup(w):
        for s in setups:
            s(w)

    return setup


def _fastchat(folder: str, questions: list, answers: dict[str, list], raw: dict[str, str] | None = None):
    def setup(w):
        root = w["root"] / folder
        (root / "model_answer").mkdir(parents=True, exist_ok=True)
        (root / "question.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
        for model, rows in answers.items():
            (root / "model_answer" / f"{model}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        for name, text in (raw or {}).items():
            (root / name).write_text(text)

    return setup


def _imported(folder: str, candidates: set[str], prompts: int):
    def check(w, proc):
        out = w["root"] / folder
        rows = [json.loads(x) for x in (out / "responses.jsonl").read_text().splitlines()]
        got = {r["candidate"] for r in rows}
        n = len((out / "prompts.jsonl").read_text().splitlines())
        return None if got == candidates and n == prompts else f"imported {sorted(got)} on {n} prompts"

    return check


def _untouched(folder: str, text: str = "old\n"):
    def check(w, proc):
        out = w["root"] / folder
        left = [p.name for p in out.glob(".*partial")]
        if (out / "prompts.jsonl").read_text() != text or left:
            return f"the output was changed ({left})"
        return None

    return check


def _old_output(folder: str, *, directory: str | None = None):
    def setup(w):
        out = w["root"] / folder
        out.mkdir(parents=True, exist_ok=True)
        (out / "prompts.jsonl").write_text("old\n")
        if directory:
            (out / directory).mkdir(exist_ok=True)
        else:
            (out / "responses.jsonl").write_text("old\n")

    return setup


NESTED = '{"x": [' * 50_000 + '"deep"' + "]}" * 50_000
Q = [{"question_id": 1, "turns": ["Q one?"]}, {"question_id": 2, "turns": ["Q two?"]}]


def _answer(model, qid, turns):
    return {"question_id": qid, "model_id": model, "choices": [{"index": 0, "turns": turns}]}


def _spent_run(name: str):
    """A finished run whose max_usd cannot pay for one more request (a priced judge)."""

    def setup(w):
        config = w["config"](name, max_calls=None, judges='["priced-openai"]', budget_extra="max_usd = 0.004")
        from orchestrator import api

        api.start(config, cache=False)
        (w["root"] / f"{name}-new.jsonl").write_text(
            "".join(
                json.dumps({"prompt_id": f"p{k}", "candidate": "NEW", "text": f"New summary {k} <<q=0.5>>", "human": {"coherence": 1}})
                + "\n"
                for k in range(2)
            )
        )

    return setup


def _run_state(name: str, state: str, *, new_candidate: str | None = None):
    def check(w, proc):
        db = sqlite3.connect(w["root"] / "runs" / f"{name}.sqlite")
        try:
            status = db.execute("select status from runs").fetchone()[0]
            n = db.execute("select count(*) from responses where candidate = ?", [new_candidate]).fetchone()[0] if new_candidate else 0
        finally:
            db.close()
        if status != state or (new_candidate and n):
            return f"run is {status}, {n} responses of {new_candidate}"
        return None

    return check


def _no_identities(name: str):
    def setup(w):
        config = w["config"](name, max_calls=4)
        from orchestrator import api

        path, _ = api.start(config, cache=False)
        db = sqlite3.connect(path)
        db.execute("drop table judge_identities")
        db.commit()
        db.close()

    return setup


def _damaged_cache(name: str):
    def setup(w):
        path = w["root"] / name
        from orchestrator import api

        api.start(w["config"](name.replace(".", "-"), max_calls=4), cache=path)
        page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
        with path.open("r+b") as fh:
            fh.seek(page)
            fh.write(b"\xa5" * (path.stat().st_size - page))

    return setup


def _cached_run_ok(name: str, *, calls: int):
    def check(w, proc):
        db = sqlite3.connect(w["root"] / "runs" / f"{name}.sqlite")
        try:
            ok, failed = db.execute("select sum(status = 'ok'), sum(status != 'ok') from judgments").fetchone()
        finally:
            db.close()
        return None if ok == calls and not failed else f"{ok} ok, {failed} failed judgments"

    return check


def _report_parses(name: str):
    def check(w, proc):
        html = (w["root"] / f"{name}.html").read_text()
        block = html.split('<script type="application/json" id="texts">', 1)[1].split("</script>", 1)[0]
        if "<" in block or ">" in block:
            return "the embedded data holds markup characters"
        texts = json.loads(block)
        return None if any("<!--<script>" in t for by in texts["responses"].values() for t in by.values()) else "texts lost"

    return check


def _breakers_data(folder: str):
    def setup(w):
        d = w["root"] / folder
        d.mkdir(exist_ok=True)
        (d / "prompts.jsonl").write_text(json.dumps({"id": "p0", "text": "Article <!-- never closed"}) + "\n")
        (d / "responses.jsonl").write_text(
            "".join(
                json.dumps({"prompt_id": "p0", "candidate": f"M{k}", "text": f"{t} <<q={0.2 * k:.2f}>>", "human": {"coherence": k}}) + "\n"
                for k, t in enumerate(["<!--<script>", "</SCRIPT >", "<![CDATA[", "plain"])
            )
        )
        config = w["config"](folder, max_calls=6)
        text = (
            config.read_text().replace(str(w["prompts"]), str(d / "prompts.jsonl")).replace(str(w["responses"]), str(d / "responses.jsonl"))
        )
        config.write_text(text)
        from orchestrator import api

        api.start(config, cache=False)

    return setup
