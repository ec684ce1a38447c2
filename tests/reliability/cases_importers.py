"""The reliability catalog, class 15: importers and readers (FastChat, CSV, JSONL, Parquet
files built to break them)."""

from __future__ import annotations

import codecs
import json

from catalog_kit import Case
from catalog_setups import NESTED, Q, _answer, _both, _csv_text, _fastchat, _file, _imported, _old_output, _untouched


def importer_cases() -> list[Case]:
    c: list[Case] = []
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
