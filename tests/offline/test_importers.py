"""`orchestrator import FORMAT PATH --out DIR`: AlpacaEval, MT-Bench (multi-turn:
the judge sees the whole conversation), arena-hard v0.1 and v2, CSV; malformed input is one line,
exit 2, nothing written."""

import json

import pytest

from conftest import write_jsonl
from judgekit import quality_behaviour, run_cli, write_config
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.records.dataset import load_dataset


def _load(out):
    return load_dataset(out / "prompts.jsonl", out / "responses.jsonl")


def test_alpacaeval_outputs_are_matched_by_instruction(tmp_path):
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(
        json.dumps([{"instruction": f"Task {i}", "output": f"A says {i}", "generator": "model-a", "dataset": "x"} for i in range(3)])
    )
    b.write_text(json.dumps([{"instruction": f"Task {i}", "output": f"B says {i}", "generator": "model-b"} for i in reversed(range(3))]))
    assert run_cli(["import", "alpacaeval", str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    data = _load(tmp_path / "out")
    assert [p.text for p in data.prompts.values()] == ["Task 0", "Task 1", "Task 2"]
    assert {pid: sorted(r) for pid, r in data.responses.items()} == {pid: ["model-a", "model-b"] for pid in data.prompts}
    assert data.responses["q0002"]["model-b"].text == "B says 2"
    assert {p.category for p in data.prompts.values()} == {"x"}  # AlpacaEval's source set: the prompts' slice


def _fastchat(folder, questions, answers):
    folder.mkdir(exist_ok=True)
    write_jsonl(folder / "question.jsonl", questions)
    (folder / "model_answer").mkdir(parents=True)
    for model, rows in answers.items():
        write_jsonl(folder / "model_answer" / f"{model}.jsonl", rows)
    return folder


def test_mtbench_multi_turn_answers_carry_the_whole_conversation(tmp_path, capsys):
    folder = tmp_path / "mt_bench"
    folder.mkdir()
    questions = [
        {"question_id": 81, "category": "writing", "turns": ["Write a poem.", "Now make it rhyme."]},
        {"question_id": 111, "category": "math", "turns": ["What is 2+2?", "And 3+3?"], "reference": ["4", "6"]},
    ]
    answers = {
        m: [
            {"question_id": q["question_id"], "answer_id": "x", "model_id": m, "choices": [{"index": 0, "turns": [f"{m} one", f"{m} two"]}]}
            for q in questions
        ]
        for m in ("vicuna-13b", "llama-13b")
    }
    _fastchat(folder, questions, answers)
    assert run_cli(["import", "mtbench", str(folder), "--out", str(tmp_path / "out")]) == 0
    assert "2 prompts" in capsys.readouterr().err
    data = _load(tmp_path / "out")
    assert data.prompts["111"].reference == "4\n\n6"
    assert data.prompts["111"].category == "math" and data.prompts["81"].category == "writing"  # kept for per-category leaderboards
    conversation = data.responses["81"]["vicuna-13b"].text
    assert (
        conversation
        == "### User:\nWrite a poem.\n\n### Assistant:\nvicuna-13b one\n\n### User:\nNow make it rhyme.\n\n### Assistant:\nvicuna-13b two"
    )
    # a model that answered one turn of two is refused with the file and line
    answers["bad"] = [{"question_id": 81, "model_id": "bad", "choices": [{"turns": ["only one"]}]}]
    broken = _fastchat(tmp_path / "broken", questions, answers)
    assert run_cli(["import", "mtbench", str(broken), "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err and "1 answer turn(s) for 2 question turn(s)" in err
    assert not (tmp_path / "out2" / "prompts.jsonl").exists()


def test_arena_hard_v01_and_v2_answers(tmp_path):
    v01 = _fastchat(
        tmp_path / "v01",
        [{"question_id": f"h{i}", "category": "arena-hard-v0.1", "cluster": "c", "turns": [{"content": f"Hard {i}"}]} for i in range(2)],
        {
            m: [
                {"question_id": f"h{i}", "model_id": m, "choices": [{"index": 0, "turns": [{"content": f"{m} {i}", "token_len": 3}]}]}
                for i in range(2)
            ]
            for m in ("gpt-4-0314", "mine")
        },
    )
    assert run_cli(["import", "arenahard", str(v01), "--out", str(tmp_path / "o1")]) == 0
    assert _load(tmp_path / "o1").responses["h1"]["mine"].text == "mine 1"
    v2 = _fastchat(
        tmp_path / "v2",
        [{"uid": "u1", "category": "hard_prompt", "prompt": "Prove it."}],
        {
            m: [
                {
                    "uid": "u1",
                    "ans_id": "a",
                    "model": m,
                    "messages": [{"role": "user", "content": "Prove it."}, {"role": "assistant", "content": {"answer": f"{m} proof"}}],
                }
            ]
            for m in ("o3", "mine")
        },
    )
    assert run_cli(["import", "arenahard", str(v2), "--out", str(tmp_path / "o2")]) == 0
    assert _load(tmp_path / "o2").responses["u1"]["o3"].text == "o3 proof"


def test_csv_with_scores_runs_end_to_end(tmp_path):
    table = tmp_path / "outputs.csv"
    rows = ["prompt_id,prompt,model,response,quality,note,category"]
    for p in range(2):
        for m in range(4):
            q = (m + 1) / 5
            rows.append(f'p{p},"Question {p}, please",m{m},"Answer <<q={q:.4f}>>",{q},fine,{"" if p else "maths"}')
    table.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    assert run_cli(["import", "csv", str(table), "--out", str(out)]) == 0
    data = _load(out)
    assert data.prompts["p1"].text == "Question 1, please"
    assert data.responses["p0"]["m3"].human == {"quality": 0.8}  # the text columns are not scores
    assert data.prompts["p0"].category == "maths" and data.prompts["p1"].category is None
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, prompts=out / "prompts.jsonl", responses=out / "responses.jsonl", max_calls=12)
        config.write_text(config.read_text().replace('truth = "coherence"', 'truth = "quality"'))
        path, _ = api.start(config)
    assert min(g["spearman_vs_truth"] for g in api.ranking(path).as_dict()["groups"]) >= 0.8


@pytest.mark.parametrize(
    "fmt, content, message",
    [
        ("alpacaeval", "[{", "not a model_outputs.json file"),
        ("alpacaeval", '[{"instruction": "x"}]', "[0]: needs text fields 'instruction' and 'output'"),
        ("alpacaeval", '[{"instruction": "x", "output": "y", "generator": "a"}]', "no prompt has two or more responses"),
        ("csv", "prompt,model\nx,a\n", "missing column(s) response"),
        ("csv", "prompt,model,response,score\nx,a,y,nan\nx,b,z,1\n", ":2: column 'score' is nan"),
        ("csv", "prompt,model,response\nx,a,y\nx,a,z\n", ":3: a second response of 'a'"),
        ("csv", 'prompt,model,response,category\nx,a,y,"m\x01"\nx,b,z,m\n', ":2: category: 'm\\x01' contains the control character"),
        ("alpacaeval", '[{"instruction": "x", "output": "y", "generator": "a", "dataset": 5}]', "[0]: field 'dataset' must be a text, got"),
        ("mtbench", "", "expected question.jsonl and a model_answer/ folder"),
        ("yaml", "", "unknown format 'yaml'"),
    ],
)
def test_malformed_input_is_one_line_and_exit_2(tmp_path, capsys, fmt, content, message):
    source = tmp_path / "input"
    if fmt == "mtbench":
        source.mkdir()
    else:
        source.write_text(content)
    assert run_cli(["import", fmt, str(source), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) <= 2
    assert not (tmp_path / "out" / "responses.jsonl").exists()
