"""Prompt templates load and render; option probabilities are read correctly from logprobs."""

import math

import pytest

from conftest import ROOT
from orchestrator.errors import OrchestratorError
from orchestrator.judging import extract_options, get_template, load_template, load_templates


def test_every_shipped_template_loads_and_renders():
    templates = load_templates(ROOT / "prompts")
    assert {
        "poe-pairwise",
        "poe-pairwise-noprefill",
        "poe-absolute",
        "poe-absolute-noprefill",
        "raee-direct-mtbench",
        "raee-pairwise-mtbench",
        "raee-pairwise-flores",
        "raee-pairwise-tldr",
        "simplex-binary-verification",
        "simplex-mtbench",
        "simplex-summeval",
        "simplex-omnimath",
        "simplex-omnimath-reference",
    } <= set(templates)
    for t in templates.values():
        values = {name: f"<{name}>" for name in t.placeholders}
        messages = t.render(values)
        text = "\n".join(m["content"] for m in messages)
        assert "${" not in text, t.name
        assert len(t.digest) == 64


def test_pairwise_render_with_attribute_and_prefill():
    t = get_template("poe-pairwise")
    messages = t.render({"context": "ART", "A": "S1", "B": "S2"}, attribute="fluency")
    assert messages[-1] == {"role": "assistant", "content": "Summary "}
    assert "Which Summary is more fluent, Summary A or Summary B?" in messages[1]["content"]
    assert 'Summary A: """S1"""\n\nSummary B: """S2"""' in messages[1]["content"]
    assert t.render({"context": "a", "A": "b", "B": "c"}, prefill=False)[-1]["role"] == "user"
    with pytest.raises(OrchestratorError, match="unknown attribute 'taste'"):
        t.render({"context": "a", "A": "b", "B": "c"}, attribute="taste")
    with pytest.raises(OrchestratorError, match="no value for placeholder"):
        t.render({"context": "a"})


def test_raee_prompt_keeps_json_braces():
    t = get_template("raee-pairwise-mtbench")
    text = t.render({"question": "Q", "reference": "R", "response": "X"})[0]["content"]
    assert '{"score": "A" | "B" | "C",' in text and "[The Start of Assistant B's Answer]\nX" in text


def test_multi_template_candidates_section():
    t = get_template("simplex-summeval")
    section = t.candidates_section([{"response": "first"}, {"response": "second"}])
    assert "<CANDIDATE #1 ANSWER>\nfirst" in section and "<CANDIDATE #2 ANSWER>\nsecond" in section
    assert [c.name for c in t.criteria] == ["relevance", "consistency", "fluency", "coherence"]


@pytest.mark.parametrize(
    "body,message",
    [
        (
            'name = "bad"\nkind = "pairwise"\nsource = "x"\nread = "first_token"\noptions = ["A"]\n[[messages]]\nrole = "user"\ncontent = "hi"\n',
            "options needs at least two",
        ),
        (
            'name = "bad"\nkind = "pairwise"\nsource = "x"\nread = "marker"\noptions = ["A", "B"]\n[[messages]]\nrole = "user"\ncontent = "hi"\n',
            "needs markers",
        ),
        (
            'name = "bad"\nkind = "vote"\nsource = "x"\nread = "first_token"\noptions = ["A", "B"]\n[[messages]]\nrole = "user"\ncontent = "hi"\n',
            "kind",
        ),
        (
            'name = "bad"\nkind = "pairwise"\nsource = "x"\nread = "first_token"\noptions = ["A", "B"]\ncolour = 1\n[[messages]]\nrole = "user"\ncontent = "hi"\n',
            "colour",
        ),
        ('name = "bad"\nkind = "pairwise"\n[oops\n', "not valid TOML"),
        (
            'name = "other"\nkind = "pairwise"\nsource = "x"\nread = "first_token"\noptions = ["A", "B"]\n[[messages]]\nrole = "user"\ncontent = "hi"\n',
            "does not match the file name",
        ),
    ],
)
def test_malformed_template_is_a_clear_error(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(OrchestratorError, match=message) as info:
        load_template(path)
    assert str(path) in str(info.value)


def test_user_template_directory(tmp_path, monkeypatch):
    (tmp_path / "mine.toml").write_text(
        'name = "mine"\nkind = "pairwise"\nsource = "me"\nread = "first_token"\noptions = ["1", "2"]\n[[messages]]\nrole = "user"\ncontent = "${A} or ${B}?"\n'
    )
    monkeypatch.setenv("ORCHESTRATOR_PROMPTS", str(tmp_path))
    assert get_template("mine").placeholders == {"A", "B"}
    with pytest.raises(OrchestratorError, match="no template 'nothing'; available: .*mine"):
        get_template("nothing")


# --- extraction -------------------------------------------------------------------------------


def _entry(token, alts):
    return {
        "token": token,
        "logprob": math.log(dict(alts).get(token, 1e-9)),
        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alts],
    }


def _response(entries, text=None):
    text = text if text is not None else "".join(e["token"] for e in entries)
    return {"choices": [{"message": {"content": text}, "logprobs": {"content": entries}}]}


def test_first_token_sums_variants_and_normalises():
    r = _response([_entry("A", [("A", 0.5), (" A", 0.1), ("a", 0.05), ("B", 0.3), ("\n", 0.05)])])
    ex = extract_options(r, read="first_token", markers=[], option_sets=[["A", "B"]])
    (reading,) = ex.readings
    assert reading.probs["A"] == pytest.approx(0.65 / 0.95)
    assert sum(reading.probs.values()) == pytest.approx(1.0)
    assert reading.method == "logprobs" and reading.capped == ()
    assert ex.top_logprobs[0][0][0] == "A"


def test_missing_option_is_capped_at_the_smallest_logprob():
    r = _response([_entry("A", [("A", 0.9), ("The", 0.06), ("\n", 0.01)])])
    (reading,) = extract_options(r, read="first_token", markers=[], option_sets=[["A", "B"]]).readings
    assert reading.capped == ("B",)
    assert reading.probs["B"] == pytest.approx(0.01 / 0.91)


def test_option_read_after_a_json_marker():
    tokens = ["{", '"', "score", '":', ' "']
    entries = [_entry(t, [(t, 0.99)]) for t in tokens] + [_entry("B", [("B", 0.7), ("A", 0.2), ("C", 0.1)]), _entry('"', [('"', 1.0)])]
    ex = extract_options(_response(entries), read="marker", markers=['"score": "'], option_sets=[["A", "B", "C"]])
    (reading,) = ex.readings
    assert reading.position == 5 and reading.probs == pytest.approx({"A": 0.2, "B": 0.7, "C": 0.1})


def test_two_token_option_ten_is_read_through_the_continuation():
    # the judge generated "1" then "0": P(10) = P(1)·P(0 | 1), P(1) = P(1)·(1 − P(0 | 1))
    first = _entry("1", [("1", 0.6), ("9", 0.3), ("8", 0.1)])
    second = _entry("0", [("0", 0.75), ("\n", 0.25)])
    options = [str(i) for i in range(1, 11)]
    (reading,) = extract_options(_response([first, second]), read="first_token", markers=[], option_sets=[options]).readings
    raw = {"1": 0.15, "10": 0.45, "9": 0.3, "8": 0.1}
    capped = 0.1  # the missing levels take the smallest returned probability
    total = sum(raw.values()) + 6 * capped
    for level, p in raw.items():
        assert reading.probs[level] == pytest.approx(p / total)
    assert set(reading.capped) == {"2", "3", "4", "5", "6", "7"} and reading.unresolved == ()


def test_two_token_option_not_taken_is_unresolved():
    first = _entry("9", [("9", 0.7), ("1", 0.29), ("\n", 0.01)])
    (reading,) = extract_options(_response([first]), read="first_token", markers=[], option_sets=[[str(i) for i in range(1, 11)]]).readings
    assert "10" in reading.unresolved and reading.probs["1"] > reading.probs["2"]


def test_negative_option_minus_one():
    tokens = ['"score":', " "]
    entries = [_entry(t, [(t, 1.0)]) for t in tokens] + [
        _entry("-", [("-", 0.6), ("1", 0.3), ("0", 0.1)]),
        _entry("1", [("1", 0.9), ("0", 0.1)]),
    ]
    (reading,) = extract_options(_response(entries), read="marker", markers=['"score": '], option_sets=[["-1", "0", "1"]]).readings
    # "-" can only continue to "-1": its whole mass is "-1"'s, P(1) and P(0) come from their own tokens
    assert reading.probs == pytest.approx({"-1": 0.6, "0": 0.1, "1": 0.3})


def test_multi_candidate_reads_every_score_in_order():
    tokens = []
    for s in ["4", "2"]:
        tokens += [_entry(t, [(t, 1.0)]) for t in ['"score":', " "]] + [_entry(s, [(s, 0.8), ("3", 0.2)])] + [_entry("}", [("}", 1.0)])]
    ex = extract_options(_response(tokens), read="marker", markers=['"score": '], option_sets=[["1", "2", "3", "4", "5"]])
    assert [max(r.probs, key=r.probs.get) for r in ex.readings] == ["4", "2"]


def test_no_logprobs_falls_back_to_the_parsed_verdict():
    r = {"choices": [{"message": {"content": "Summary B"}}]}
    ex = extract_options(r, read="first_token", markers=[], option_sets=[["A", "B"]], prefill="Summary ")
    assert ex.readings[0].method == "verdict" and ex.readings[0].probs == {"A": 0.0, "B": 1.0}
    assert "no log-probabilities" in ex.note
    r = {"choices": [{"message": {"content": 'Explanation... {"score": "C", "confidence": 1.0}'}}]}
    ex = extract_options(r, read="marker", markers=['"score": "'], option_sets=[["A", "B", "C"]])
    assert ex.readings[0].probs["C"] == 1.0
    r = {"choices": [{"message": {"content": "Rating: [[10]]"}}]}
    ex = extract_options(r, read="marker", markers=["[["], option_sets=[[str(i) for i in range(1, 11)]])
    assert ex.readings[0].probs["10"] == 1.0


def test_garbage_is_an_error_not_an_exception():
    ex = extract_options(
        {"choices": [{"message": {"content": "I cannot judge this."}}]}, read="first_token", markers=[], option_sets=[["A", "B"]]
    )
    assert ex.readings == [] and "no parsable verdict" in ex.error
    assert extract_options({}, read="first_token", markers=[], option_sets=[["A", "B"]]).error == "response has no choices"
    r = _response([_entry("I", [("I", 0.9), ("The", 0.1)])], text="I think...")
    ex = extract_options(r, read="first_token", markers=[], option_sets=[["A", "B"]])
    assert ex.readings == [] and ex.error.startswith("no answer option found")
