"""Reliability, class 7: every importer and the dataset and log readers,
fuzzed — random truncation, type swaps, deep nesting, encodings, broken quoting, stray bytes. Each
input either reads or fails with one OrchestratorError line; never a traceback, never a partial
output (the output folder holds the old files, or both new ones complete). Real files, in-process
(a few thousand inputs in seconds)."""

from __future__ import annotations

import codecs
import copy
import csv
import io
import json
import random
import warnings
from pathlib import Path
from typing import Any, Callable

import pytest

from orchestrator.errors import OrchestratorError
from orchestrator.records.dataset import load_dataset
from orchestrator.records.importers import import_data, write_imported
from orchestrator.records.log import load_log

TEXTS = ["Write a poem about the sea.", "Résumé: naïve café — ½ “quoted”", "2 + 2 = ?", "Ünïcödé ✓ 日本語"]
CASES_PER_SHAPE = 400


# -- valid seeds ------------------------------------------------------------------------------------
def _alpaca(models=("model-a", "model-b")) -> dict[str, Any]:
    return {f"{m}.json": [{"instruction": t, "output": f"{m}: {t}", "generator": m} for t in TEXTS] for m in models}


def _mtbench() -> dict[str, Any]:
    questions = [{"question_id": 81 + k, "turns": [t, "And again?"], "reference": ["r1", "r2"]} for k, t in enumerate(TEXTS)]
    answers = {
        m: [
            {"question_id": q["question_id"], "model_id": m, "choices": [{"index": 0, "turns": [f"{m} one", f"{m} two"]}]}
            for q in questions
        ]
        for m in ("vicuna", "llama")
    }
    return {"question.jsonl": questions, **{f"model_answer/{m}.jsonl": rows for m, rows in answers.items()}}


def _arenahard() -> dict[str, Any]:
    questions = [{"uid": f"u{k}", "prompt": t} for k, t in enumerate(TEXTS)]
    answers = {
        m: [
            {
                "uid": q["uid"],
                "model": m,
                "messages": [{"role": "user", "content": q["prompt"]}, {"role": "assistant", "content": {"answer": f"{m} says"}}],
            }
            for q in questions
        ]
        for m in ("gpt", "claude")
    }
    return {"question.jsonl": questions, **{f"model_answer/{m}.jsonl": rows for m, rows in answers.items()}}


def _csv_rows() -> list[list[str]]:
    rows = [["prompt_id", "prompt", "model", "response", "score", "note"]]
    for k, t in enumerate(TEXTS):
        for m in ("m1", "m2"):
            rows.append([f"p{k}", t, m, f'{m} answers, "quoted", and\na second line', str(k), "ok"])
    return rows


def _dataset() -> dict[str, Any]:
    prompts = [{"id": f"p{k}", "text": t} for k, t in enumerate(TEXTS)]
    responses = [
        {"prompt_id": f"p{k}", "candidate": m, "text": f"{m} on {t}", "human": {"coherence": k}} for k, t in enumerate(TEXTS) for m in "AB"
    ]
    return {"prompts.jsonl": prompts, "responses.jsonl": responses}


def _log() -> dict[str, Any]:
    rows = [
        {"kind": "pairwise", "judge": "j", "prompt_id": f"p{k}", "candidates": ["A", "B"], "probs": {"A": 0.3, "B": 0.7}} for k in range(4)
    ] + [{"kind": "absolute", "judge": "j", "prompt_id": "p0", "candidates": ["A"], "probs": {"1": 0.2, "5": 0.8}}]
    return {"log.jsonl": rows}


# -- mutations --------------------------------------------------------------------------------------
SWAPS: list[Any] = [None, 7, -1.5, True, "", "text", [], [1, "x"], {}, {"content": None}, float("nan")]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    items = list(value)
    items[head] = _replace(items[head], rest, new)
    return items


def _serialise(name: str, content: Any) -> bytes:
    if isinstance(content, bytes):
        return content
    if name.endswith(".jsonl"):
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in content).encode()
    if name.endswith(".csv"):
        buffer = io.StringIO()
        csv.writer(buffer).writerows(content)
        return buffer.getvalue().encode()
    return json.dumps(content, ensure_ascii=False).encode()


def _mutate(rng: random.Random, files: dict[str, Any]) -> dict[str, bytes]:
    """One hostile variant of ``files`` (name → content): a structural change on one file, then
    maybe damage to its bytes."""
    files = dict(files)
    name = rng.choice(sorted(files))
    content = files[name]
    kind = rng.choice(
        ["swap", "swap", "nest", "drop", "bytes", "encoding", "truncate", "csv"]
        if name.endswith(".csv")
        else ["swap", "swap", "nest", "drop", "bytes", "encoding", "truncate"]
    )
    data: bytes | None = None
    if kind in ("swap", "nest", "drop") and not name.endswith(".csv"):
        paths = _paths(content)
        target = rng.choice(paths)
        if kind == "swap":
            content = _replace(content, target, rng.choice(SWAPS))
        elif kind == "nest":  # written as text: json.dumps itself cannot nest this deep
            content = _replace(content, target, "__NEST__")
        elif target and isinstance(content, (list, dict)):
            parent = copy.deepcopy(content)
            container: Any = parent
            for step in target[:-1]:
                container = container[step]
            if isinstance(container, dict):
                container.pop(target[-1], None)
            elif container:
                container.pop(target[-1])
            content = parent
        try:
            data = _serialise(name, content if name.endswith(".jsonl") and isinstance(content, list) else content)
        except (TypeError, ValueError, RecursionError):  # (a swap that made a .jsonl file not a list of rows)
            data = json.dumps(content, default=str).encode() if not isinstance(content, list) else b"[]"
    elif kind == "csv":
        rows = [list(r) for r in content]
        row = rng.randrange(len(rows))
        choice = rng.randrange(4)
        if choice == 0:
            rows[row].append("extra")
        elif choice == 1 and rows[row]:
            rows[row].pop()
        text = _serialise(name, rows).decode()
        if choice == 2:  # an unbalanced quote somewhere
            at = rng.randrange(len(text))
            text = text[:at] + '"' + text[at:]
        elif choice == 3:  # a separator where a quoted comma was
            text = text.replace('"quoted"', "quoted", 1).replace('answers, "', "answers, ", 1)
        data = text.encode()
    data = data if data is not None else _serialise(name, content)
    if kind == "nest":
        depth = rng.choice([50, 5000, 100_000])
        data = data.replace(b'"__NEST__"', (b'{"x": [' * depth) + b'"deep"' + (b"]}" * depth), 1)
    if kind == "bytes":
        at = rng.randrange(len(data) + 1)
        data = data[:at] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6))) + data[at:]
    elif kind == "encoding":
        text = data.decode("utf-8", errors="replace")
        codec = rng.choice(["utf-16", "utf-8-sig", "cp1252", "latin-1", "utf-16-le", "utf-32"])
        data = text.encode(codec, errors="replace") if codec != "utf-8-sig" else codecs.BOM_UTF8 + text.encode()
    elif kind == "truncate":
        data = data[: rng.randrange(len(data) + 1)]
    out = {n: _serialise(n, c) for n, c in files.items()}
    out[name] = data
    return out


# -- the check ----------------------------------------------------------------------------------------
def _write(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _one_line(exc: OrchestratorError) -> None:
    message = str(exc)
    assert message and "\n" not in message.strip() and "Traceback" not in message, message


SHAPES: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[Path, dict[str, Any]], Any]]] = {
    "alpacaeval": (_alpaca, lambda d, f: import_data("alpacaeval", sorted(d / n for n in f))),
    "mtbench": (_mtbench, lambda d, f: import_data("mtbench", [d])),
    "arenahard": (_arenahard, lambda d, f: import_data("arenahard", [d])),
    "csv": (lambda: {"data.csv": _csv_rows()}, lambda d, f: import_data("csv", [d / "data.csv"])),
    "dataset": (_dataset, lambda d, f: load_dataset(d / "prompts.jsonl", d / "responses.jsonl")),
    "log": (_log, lambda d, f: load_log(d / "log.jsonl")),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hostile_inputs_read_or_fail_with_one_line_and_never_write_half(tmp_path, shape):
    seed_files, read = SHAPES[shape]
    base = seed_files()
    read(_setup(tmp_path / "seed", {n: _serialise(n, c) for n, c in base.items()}), base)  # the seed itself reads
    rng = random.Random(f"fuzz-{shape}")
    out = tmp_path / "out"
    out.mkdir()
    old = {"prompts.jsonl": b'{"id": "old", "text": "old"}\n', "responses.jsonl": b'{"prompt_id": "old", "candidate": "x", "text": "y"}\n'}
    outcomes = {"read": 0, "refused": 0}
    for case in range(CASES_PER_SHAPE):
        folder = tmp_path / f"c{case}"
        files = _mutate(rng, base)
        _setup(folder, files)
        _write(out, old)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = read(folder, files)
                if shape in ("alpacaeval", "mtbench", "arenahard", "csv"):
                    write_imported(result, out, [folder])
        except OrchestratorError as exc:
            _one_line(exc)
            assert {n: (out / n).read_bytes() for n in old} == old, f"case {case}: a refused input changed the output"
            outcomes["refused"] += 1
        else:
            outcomes["read"] += 1
            if shape in ("alpacaeval", "mtbench", "arenahard", "csv"):  # both new files, complete and consistent
                data = load_dataset(out / "prompts.jsonl", out / "responses.jsonl", min_candidates=1)
                assert all(pid in data.prompts for pid in data.responses)
    assert outcomes["refused"] > CASES_PER_SHAPE // 10 and outcomes["read"] > 0, outcomes


def _setup(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder, files)
    return folder


def test_an_output_folder_with_one_target_a_directory_writes_neither(tmp_path):
    source = tmp_path / "a.json"
    source.write_text(json.dumps(_alpaca()["model-a.json"] + _alpaca()["model-b.json"]))
    out = tmp_path / "out"
    (out / "responses.jsonl").mkdir(parents=True)
    (out / "prompts.jsonl").write_text("old\n")
    with pytest.raises(OrchestratorError, match="is a directory"):
        write_imported(import_data("alpacaeval", [source]), out, [source])
    assert (out / "prompts.jsonl").read_text() == "old\n" and not list(out.glob(".*partial"))


@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-16"])
def test_spreadsheet_encodings_with_a_mark_read_as_text(tmp_path, codec):
    text = _serialise("x.csv", _csv_rows()).decode()
    source = tmp_path / "data.csv"
    source.write_bytes(text.replace(",", "\t").encode(codec) if codec == "utf-16" else text.encode(codec))
    imported = import_data("csv", [source])
    assert {r["candidate"] for r in imported.responses.values()} == {"m1", "m2"}
    assert any("Résumé" in p["text"] for p in imported.prompts.values())


def test_a_legacy_encoding_is_named_and_read_when_given(tmp_path):
    source = tmp_path / "data.csv"
    source.write_bytes(
        _serialise("x.csv", _csv_rows())
        .decode()
        .replace("“", '""')
        .replace("”", '""')
        .replace("✓", "v")
        .replace("日本語", "jp")
        .encode("cp1252")
    )
    with pytest.raises(OrchestratorError, match=r"data.csv:\d+: not valid UTF-8 .*--encoding cp1252"):
        import_data("csv", [source])
    imported = import_data("csv", [source], encoding="cp1252")
    assert any("Résumé" in p["text"] for p in imported.prompts.values())


def test_csv_quoting_errors_name_their_line_and_never_shift_rows(tmp_path):
    good = _serialise("x.csv", _csv_rows()).decode().splitlines(keepends=True)
    first_row_extra = tmp_path / "extra.csv"
    first_row_extra.write_text(good[0] + 'p0,text,m1,"a, b",1,ok,surplus\n' + "".join(good[1:]))
    with pytest.raises(OrchestratorError, match=r"extra.csv:2: 7 fields where the header has 6"):
        import_data("csv", [first_row_extra])
    unclosed = tmp_path / "unclosed.csv"
    lines = _serialise("x.csv", [r for r in _csv_rows()]).decode()
    unclosed.write_text(
        lines.replace('m2 answers, "', 'm2 answers, "', 1).replace('"m2 answers', '"m2 answers "unclosed', 1) + "p9,last,m3,x,1,ok\n"
    )
    with pytest.raises(OrchestratorError, match=r"unclosed.csv:\d+: "):
        import_data("csv", [unclosed])
