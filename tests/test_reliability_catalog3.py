"""Reliability, third campaign (issue #31): the catalog's new classes, each case the real
``orchestrator`` command in a child process on real files against real HTTP servers on 127.0.0.1
(the world and the runner of :mod:`test_reliability_catalog`): the right exit code, one clear line
on errors, no traceback, nothing stored changed.

Classes (numbered after the second campaign's eight): 9 the cache answers only for who answered and
never blames the judge, 10 batches, 11 spending more than asked and success without work,
12 signals while waiting (tests/test_reliability_signals.py), 13 secrets in new places,
14 the report broken by the data, 15 importers and readers of peers' messy files.

The classes that need several servers or a signal are tested beside it, with the same real parts:
tests/test_reliability_cache.py, test_reliability_batches.py, test_reliability_budget.py,
test_reliability_signals.py, test_reliability_fuzz.py and test_report.py.
"""

from __future__ import annotations

import codecs
import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_reliability_catalog import Case, run_case, world  # noqa: F401  (the module fixture)

pytestmark = pytest.mark.slow

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


def catalog() -> list[Case]:
    c: list[Case] = []
    # -- 9: the judgment cache ----------------------------------------------------------------------
    c += [
        Case(
            9,
            "cache import of a run that does not record who answered",
            ["cache", "import", "{dir}/runs/noident.sqlite", "--cache", "{dir}/c9a.sqlite"],
            2,
            "does not record which model answered",
            setup=_no_identities("noident"),
        ),
        Case(
            9,
            "run with a named cache that is not one",
            ["run", "{dir}/c9b.toml", "--cache", "{dir}/garbage.sqlite"],
            2,
            "not a judgment cache",
            setup=_both(_file("garbage.sqlite", b"not a database" * 200), lambda w: w["config"]("c9b", max_calls=4)),
            no_run_file="c9b",
        ),
        Case(
            9,
            "run with a default cache that is not one goes on without it",
            ["run", "{dir}/c9c.toml", "--no-report"],
            0,
            "going on without the judgment cache",
            setup=_both(_file("garbage9c.sqlite", b"not a database" * 200), lambda w: w["config"]("c9c", max_calls=4)),
            env={"ORCHESTRATOR_JUDGMENT_CACHE": "{dir}/garbage9c.sqlite"},
            one_line=False,
            check=_cached_run_ok("c9c", calls=4),
        ),
        Case(
            9,
            "run with a damaged cache: bypassed, never charged to the judge",
            ["run", "{dir}/c9d.toml", "--cache", "{dir}/damaged.sqlite", "--no-report"],
            0,
            "cannot be read",
            setup=_both(_damaged_cache("damaged.sqlite"), lambda w: w["config"]("c9d", max_calls=4)),
            one_line=False,
            check=_cached_run_ok("c9d", calls=4),
        ),
        Case(
            9,
            "cache stats of a damaged cache",
            ["cache", "stats", "--cache", "{dir}/damaged9e.sqlite"],
            2,
            "damaged9e.sqlite: the judgment cache cannot be used",
            setup=_damaged_cache("damaged9e.sqlite"),
        ),
        Case(9, "cache import into the run file itself", ["cache", "import", "{run}", "--cache", "{run}"], 2, "the cache itself"),
    ]
    # -- 11: spending more than asked, success without work ----------------------------------------------
    c += [
        Case(
            11,
            "pilot smaller than one comparison (both orders)",
            ["run", "{dir}/c11a.toml", "--pilot", "1"],
            2,
            "give --pilot 2 or more",
            setup=lambda w: w["config"]("c11a", max_calls=8, debias="permutation"),
            no_run_file="c11a",
        ),
        Case(
            11,
            "pilot 0",
            ["run", "{dir}/c11b.toml", "--pilot", "0"],
            2,
            "--pilot",
            setup=lambda w: w["config"]("c11b", max_calls=8),
            no_run_file="c11b",
        ),
        Case(
            11,
            "extend on a spent max_usd",
            ["extend", "{dir}/runs/spent.sqlite", "--responses", "{dir}/spent-new.jsonl", "--no-cache"],
            2,
            "give --add-usd",
            setup=_spent_run("spent"),
            check=_run_state("spent", "finished", new_candidate="NEW"),
        ),
        Case(11, "extend --add-usd nan", ["extend", "{run}", "--responses", "{responses}", "--add-usd", "nan"], 2, "--add-usd"),
        Case(11, "extend --add-usd -1", ["extend", "{run}", "--responses", "{responses}", "--add-usd", "-1"], 2, "--add-usd"),
        Case(11, "extend --add-tokens 0", ["extend", "{run}", "--responses", "{responses}", "--add-tokens", "0"], 2, "--add-tokens"),
        Case(11, "extend with nothing new", ["extend", "{run}", "--responses", "{responses}", "--add-calls", "4"], 2, "nothing new"),
    ]
    # -- 14: the report ----------------------------------------------------------------------------------
    c += [
        Case(
            14,
            "report of texts that change HTML parsing",
            ["report", "{dir}/runs/breakers.sqlite", "--out", "{dir}/breakers.html"],
            0,
            setup=_breakers_data("breakers"),
            check=_report_parses("breakers"),
            one_line=False,
        )
    ]
    # -- 15: importers and readers -----------------------------------------------------------------------
    alpaca = [{"instruction": f"Task {k}", "output": f"{m} {k}", "generator": m} for k in range(2) for m in ("a", "b")]
    c += [
        Case(
            15,
            "csv: a first row with a field too many",
            ["import", "csv", "{dir}/i1.csv", "--out", "{dir}/o1"],
            2,
            "i1.csv:2: 5 fields where the header has 4",
            setup=_file("i1.csv", "prompt_id,prompt,model,response\np1,Write,m1,Roses, and more\np1,Write,m2,Violets\n"),
        ),
        Case(
            15,
            "csv: a later row with a quote never closed",
            ["import", "csv", "{dir}/i2.csv", "--out", "{dir}/o2"],
            2,
            "i2.csv:",
            setup=_file("i2.csv", _csv_text().replace("Another.", '"Another.') + "p3,x,m3,y\n"),
        ),
        Case(
            15,
            "csv: a row with a field too few",
            ["import", "csv", "{dir}/i3.csv", "--out", "{dir}/o3"],
            2,
            "i3.csv:3: 3 fields",
            setup=_file("i3.csv", _csv_text().replace("p1,Write a poem.,m2,Violets.", "p1,Write a poem.,m2")),
        ),
        Case(
            15,
            "csv: UTF-8 with a byte-order mark (Excel 'CSV UTF-8')",
            ["import", "csv", "{dir}/i4.csv", "--out", "{dir}/o4"],
            0,
            setup=_file("i4.csv", codecs.BOM_UTF8 + _csv_text().encode()),
            check=_imported("o4", {"m1", "m2"}, 2),
            one_line=False,
        ),
        Case(
            15,
            "csv: UTF-16 tab separated (Excel 'Unicode text')",
            ["import", "csv", "{dir}/i5.csv", "--out", "{dir}/o5"],
            0,
            setup=_file("i5.csv", _csv_text("\t").encode("utf-16")),
            check=_imported("o5", {"m1", "m2"}, 2),
            one_line=False,
        ),
        Case(
            15,
            "csv: semicolon separated",
            ["import", "csv", "{dir}/i6.csv", "--out", "{dir}/o6"],
            0,
            setup=_file("i6.csv", _csv_text(";")),
            check=_imported("o6", {"m1", "m2"}, 2),
            one_line=False,
        ),
        Case(
            15,
            "csv: cp1252 bytes are named, with the option",
            ["import", "csv", "{dir}/i7.csv", "--out", "{dir}/o7"],
            2,
            "--encoding cp1252",
            setup=_file("i7.csv", _csv_text().replace("“", "'").replace("”", "'").encode("cp1252")),
        ),
        Case(
            15,
            "csv: cp1252 read with --encoding",
            ["import", "csv", "{dir}/i8.csv", "--out", "{dir}/o8", "--encoding", "cp1252"],
            0,
            setup=_file("i8.csv", _csv_text().replace("“", "'").replace("”", "'").encode("cp1252")),
            check=_imported("o8", {"m1", "m2"}, 2),
            one_line=False,
        ),
        Case(
            15,
            "an unknown --encoding",
            ["import", "csv", "{dir}/i9.csv", "--out", "{dir}/o9", "--encoding", "klingon"],
            2,
            "not an encoding",
            setup=_file("i9.csv", _csv_text()),
        ),
        Case(
            15,
            "csv: a header without the model column",
            ["import", "csv", "{dir}/i10.csv", "--out", "{dir}/o10"],
            2,
            "missing column(s) model (or candidate)",
            setup=_file("i10.csv", "prompt,response\nx,y\n"),
        ),
        Case(
            15,
            "csv: duplicate header names",
            ["import", "csv", "{dir}/i11.csv", "--out", "{dir}/o11"],
            2,
            "distinct",
            setup=_file("i11.csv", "prompt,prompt,model,response\na,b,c,d\n"),
        ),
        Case(
            15,
            "alpacaeval: JSON nested too deeply",
            ["import", "alpacaeval", "{dir}/i12.json", "--out", "{dir}/o12"],
            2,
            "nested too deeply",
            setup=_file("i12.json", "[" + NESTED + "]"),
        ),
        Case(
            15,
            "alpacaeval: a number as generator",
            ["import", "alpacaeval", "{dir}/i13.json", "--out", "{dir}/o13"],
            2,
            "'generator' must be a text",
            setup=_file("i13.json", json.dumps([{**alpaca[0], "generator": 7}] + alpaca[1:])),
        ),
        Case(
            15,
            "alpacaeval: UTF-8 with a byte-order mark",
            ["import", "alpacaeval", "{dir}/i14.json", "--out", "{dir}/o14"],
            0,
            setup=_file("i14.json", codecs.BOM_UTF8 + json.dumps(alpaca).encode()),
            check=_imported("o14", {"a", "b"}, 2),
            one_line=False,
        ),
        Case(
            15,
            "alpacaeval: cut in the middle",
            ["import", "alpacaeval", "{dir}/i15.json", "--out", "{dir}/o15"],
            2,
            "i15.json:1: not a model_outputs.json file",
            setup=_file("i15.json", json.dumps(alpaca)[:40]),
        ),
        Case(
            15,
            "mtbench: null messages",
            ["import", "arenahard", "{dir}/i16", "--out", "{dir}/o16"],
            2,
            "field 'messages' must be a non-empty list, got null",
            setup=_fastchat("i16", [{"uid": "u1", "prompt": "Q?"}], {"m": [{"uid": "u1", "messages": None}]}),
        ),
        Case(
            15,
            "mtbench: a number for turns",
            ["import", "mtbench", "{dir}/i17", "--out", "{dir}/o17"],
            2,
            "field 'turns' must be a non-empty list, got a number",
            setup=_fastchat("i17", Q, {"a": [_answer("a", 1, 3)]}),
        ),
        Case(
            15,
            "mtbench: a question whose turns is a number",
            ["import", "mtbench", "{dir}/i18", "--out", "{dir}/o18"],
            2,
            "question.jsonl:1: field 'turns' must be a non-empty list",
            setup=_fastchat("i18", [{"question_id": 1, "turns": 2}], {}),
        ),
        Case(
            15,
            "mtbench: a list as question_id",
            ["import", "mtbench", "{dir}/i19", "--out", "{dir}/o19"],
            2,
            "field 'question_id' must be a text or a whole number",
            setup=_fastchat("i19", [{"question_id": [1], "turns": ["Q?"]}], {}),
        ),
        Case(
            15,
            "mtbench: a null answer turn",
            ["import", "mtbench", "{dir}/i20", "--out", "{dir}/o20"],
            2,
            "expected a text, got null",
            setup=_fastchat("i20", Q, {"a": [_answer("a", 1, [None]), _answer("a", 2, ["x"])]}),
        ),
        Case(
            15,
            "mtbench: deeply nested answer line",
            ["import", "mtbench", "{dir}/i21", "--out", "{dir}/o21"],
            2,
            "nested too deeply",
            setup=_fastchat("i21", Q, {}, raw={"model_answer/a.jsonl": NESTED + "\n"}),
        ),
        Case(
            15,
            "an output folder whose responses.jsonl is a directory",
            ["import", "alpacaeval", "{dir}/i14b.json", "--out", "{dir}/o22"],
            2,
            "is a directory",
            setup=_both(_file("i14b.json", json.dumps(alpaca)), _old_output("o22", directory="responses.jsonl")),
            check=_untouched("o22"),
        ),
        Case(
            15,
            "a refused import leaves the old output",
            ["import", "alpacaeval", "{dir}/i15b.json", "--out", "{dir}/o23"],
            2,
            "not a model_outputs.json",
            setup=_both(_file("i15b.json", "[{"), _old_output("o23")),
            check=_untouched("o23"),
        ),
        Case(
            15,
            "--out is a file",
            ["import", "alpacaeval", "{dir}/i14c.json", "--out", "{dir}/i14c.json"],
            2,
            "is a file",
            setup=_file("i14c.json", json.dumps(alpaca)),
        ),
        Case(
            15,
            "dataset: a responses line nested too deeply",
            ["run", "{dir}/c15d.toml"],
            2,
            "nested too deeply",
            setup=_both(
                _file("deep/responses.jsonl", NESTED + "\n"),
                lambda w: w["config"]("c15d", max_calls=4).write_text(
                    w["config"]("c15d", max_calls=4).read_text().replace(str(w["responses"]), str(w["root"] / "deep" / "responses.jsonl"))
                ),
            ),
            no_run_file="c15d",
        ),
        Case(
            15,
            "dataset: UTF-16 prompts file is read",
            ["run", "{dir}/c15e.toml", "--dry-run"],
            0,
            setup=_both(
                lambda w: (w["root"] / "u16").mkdir(exist_ok=True),
                lambda w: (w["root"] / "u16" / "prompts.jsonl").write_bytes(w["prompts"].read_text().encode("utf-16")),
                lambda w: w["config"]("c15e", max_calls=4).write_text(
                    w["config"]("c15e", max_calls=4).read_text().replace(str(w["prompts"]), str(w["root"] / "u16" / "prompts.jsonl"))
                ),
            ),
            one_line=False,
        ),
        Case(
            15,
            "log: a line nested too deeply",
            ["replay", "{dir}/deep.jsonl"],
            2,
            "deep.jsonl:2: JSON nested too deeply",
            setup=lambda w: (w["root"] / "deep.jsonl").write_text(w["log"].read_text().splitlines()[0] + "\n" + NESTED + "\n"),
        ),
        Case(
            15,
            "log: a byte-order mark",
            ["replay", "{dir}/bom.jsonl", "--json"],
            0,
            setup=lambda w: (w["root"] / "bom.jsonl").write_bytes(codecs.BOM_UTF8 + w["log"].read_bytes()),
            one_line=False,
        ),
        Case(
            15,
            "log: cp1252 bytes",
            ["replay", "{dir}/cp.jsonl"],
            2,
            "not valid UTF-8",
            setup=_file(
                "cp.jsonl",
                b'{"kind": "pairwise", "judge": "j\xe9", "prompt_id": "p", "candidates": ["a", "b"], "probs": {"A": 0.5, "B": 0.5}}\n',
            ),
        ),
    ]
    return c


def test_the_third_campaign_catalog_covers_its_classes():
    cases = catalog()
    assert len(cases) >= 40
    assert {case.klass for case in cases} == {9, 11, 14, 15}
    assert len({case.name for case in cases}) == len(cases)


def test_reliability_catalog_third_campaign(world):  # noqa: F811  (the imported fixture)
    """Every case: the right exit code, one clear line, no traceback, nothing stored changed."""
    cases = catalog()
    for case in cases:
        case.env = {k: v.replace("{dir}", str(world["root"])) for k, v in case.env.items()}
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda case: run_case(case, world), cases))
    failures = [r for r in results if r]
    print(f"{len(cases)} cases, {len(cases) - len(failures)} behaved, {time.monotonic() - started:.0f} s")
    assert failures == [], "\n".join(failures)
