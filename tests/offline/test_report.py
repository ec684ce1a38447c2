"""Issue #19: `orchestrator report` — one self-contained HTML file a person reads, checked in a real
headless Chromium (skipped where neither Chromium nor Playwright is installed; `.ci/run` installs both)."""

import json
import re
import shutil
import sqlite3

import pytest

from judgekit import quality_behaviour, run_cli, write_config, write_dataset
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer
from orchestrator.report import collect, summary_text, write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    prompts, responses = write_dataset(tmp / "data", prompts=2, candidates=6, spread=0.0, base=[0.9, 0.75, 0.6, 0.45, 0.3, 0.15])
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp, server.url, name="reported", prompts=prompts, responses=responses, max_calls=40)
        path, _ = api.start(config)
    return tmp, path


def test_the_report_is_one_self_contained_file_with_every_section(finished_run):
    tmp, path = finished_run
    out = tmp / "report.html"
    before = path.read_bytes()
    assert run_cli(["report", str(path), "--out", str(out)]) == 0
    assert path.read_bytes() == before  # read-only
    html = out.read_text()
    # nothing fetched: no external script, style, image or font
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    for section in ("summary", "ranking", "efficiency", "spend", "judges", "judgments"):
        assert f"id='{section}'" in html or f'id="{section}"' in html, section
    n = sqlite3.connect(path).execute("select count(*) from judgments").fetchone()[0]
    assert html.count('<details class="judgment"') == n
    assert html.count("<svg") >= 4  # rank intervals per prompt, uncertainty, Spearman, calls per round


def test_the_summary_says_what_was_found_what_is_uncertain_and_what_it_cost(finished_run):
    _, path = finished_run
    data = collect(path)
    text = summary_text(data)
    assert "leads" in text and "neighbouring pairs" in text and "are settled" in text and "judge calls" in text
    n = data.neighbours
    assert n["total"] == 10 and n["resolved"] + n["tied"] + n["uncertain"] == 10 and n["resolved"] >= 5
    assert "Agreement with the reference scores (Spearman)" in text
    # the efficiency curve ends at every judgment, with the truth
    assert data.curve[-1]["calls"] == len(data.judgments) and data.curve[-1]["spearman"] > 0.8
    judge = data.judges["local-openai"]
    assert judge["calls"] == len(data.judgments) and 0.0 <= judge["first_shown_wins"] <= 1.0
    assert judge["calibration"]["temperature"] > 0 and judge["calibration"]["ece_after"] <= judge["calibration"]["ece"] + 1e-9


def test_bad_report_requests_are_one_line_and_touch_nothing(finished_run, tmp_path, capsys):
    _, path = finished_run
    before = path.read_bytes()
    assert run_cli(["report", str(path), "--out", str(path)]) == 2
    assert path.read_bytes() == before
    not_a_run = tmp_path / "notes.txt"
    not_a_run.write_text("hello")
    assert run_cli(["report", str(not_a_run), "--out", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert err and all("Traceback" not in line for line in err)


def test_run_writes_the_report_at_the_end_unless_told_not_to(tmp_path):
    prompts, responses = write_dataset(tmp_path / "data", prompts=1, candidates=4)
    with FakeOpenAIServer(quality_behaviour) as server:
        yes = write_config(tmp_path, server.url, name="with-report", prompts=prompts, responses=responses, max_calls=8)
        no = write_config(tmp_path, server.url, name="without-report", prompts=prompts, responses=responses, max_calls=8)
        assert run_cli(["run", str(yes)]) == 0
        assert run_cli(["run", str(no), "--no-report"]) == 0
    assert (tmp_path / "runs" / "with-report.html").stat().st_size > 1000
    assert not (tmp_path / "runs" / "without-report.html").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (.ci/run installs the Debian package)")
def test_the_report_renders_in_a_real_browser_and_a_judgment_opens(finished_run):
    sync_api = pytest.importorskip("playwright.sync_api")
    tmp, path = finished_run
    out = write_report(path, tmp / "browser.html")
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("request", lambda r: problems.append(f"fetched {r.url}") if not r.url.startswith(("file:", "data:")) else None)
        page.goto(out.as_uri())
        # every chart is laid out with a size
        boxes = [page.locator("svg.chart").nth(k).bounding_box() for k in range(page.locator("svg.chart").count())]
        assert len(boxes) >= 4 and all(b and b["width"] > 100 and b["height"] > 30 for b in boxes)
        # the drill-down: opening a judgment shows its prompt, both texts and the option probabilities
        first = page.locator("details.judgment").first
        first.locator("summary").click()
        body = first.locator(".body")
        body.locator("h4").first.wait_for()  # filled by the toggle event, after the click returns
        text = body.inner_text()
        assert "Prompt" in text and "<<q=" in text and "P(A)" in text
        # the filter hides what does not match
        page.fill("#filter", "no judgment has this text")
        assert page.locator("details.judgment:visible").count() == 0
        page.fill("#filter", "")
        page.screenshot(path=str(tmp / "report.png"), full_page=False)
        browser.close()
    assert problems == []


def test_a_reference_campaign_report_carries_the_raee_section(tmp_path):
    prompts, responses = write_dataset(tmp_path / "data", prompts=2, candidates=4, reference=0.5)
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            tmp_path,
            server.url,
            name="ref",
            prompts=prompts,
            responses=responses,
            max_calls=None,
            reference='template = "raee-pairwise-summary"\n',
        )
        path, _ = api.start(config)
    html = write_report(path, tmp_path / "ref.html").read_text()  # type: ignore[union-attr]
    assert "RAEE: reference-anchored Elo" in html and "judge screen" in html and "SE Elo" in html
    # the leaderboard as `rank` prints it: rows in Elo order, each win rate and interval as in `rank --json`
    rows = api.ranking(path).as_dict()["groups"][0]["ranking"]
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    for r in rows:
        cells = f'<td>{r["candidate"]}</td><td>{r["rank_low"]}–{r["rank_high"]}</td><td class="num">{round(r["score"])}</td>'
        assert cells + f"<td>{r['win_rate']:.1f} ({r['win_rate_low']:.1f}–{r['win_rate_high']:.1f})</td>" in html
    assert html.count('<details class="judgment"') == sqlite3.connect(path).execute("select count(*) from judgments").fetchone()[0]


def test_a_candidate_with_one_answer_for_every_prompt_is_flagged_in_rank_and_the_report(tmp_path, capsys):
    """Issue #33: a constant answer (built to game the judge) is named wherever the ranking is shown."""
    prompts, responses = write_dataset(tmp_path / "data", prompts=4, candidates=4, reference=0.5, base=[0.8, 0.6, 0.4, 0.2], spread=0.0)
    rows = [json.loads(line) for line in responses.read_text().splitlines()]
    for row in rows:  # every candidate but M0 answers each prompt in its own words
        if row["candidate"] != "M0":
            row["text"] = f"On {row['prompt_id']}: " + row["text"]
    responses.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(
            tmp_path,
            server.url,
            name="gamed",
            prompts=prompts,
            responses=responses,
            max_calls=None,
            reference='template = "raee-pairwise-summary"\n',
        )
        path, _ = api.start(config)
    capsys.readouterr()
    assert run_cli(["rank", str(path), "--json"]) == 0
    flags = json.loads(capsys.readouterr().out)["flags"]
    assert list(flags) == ["M0"] and flags["M0"][0].startswith("constant: one answer on 100% of its prompts")
    assert run_cli(["rank", str(path)]) == 0
    assert "flagged: M0: constant: one answer on 100% of its prompts" in capsys.readouterr().out
    html = write_report(path, tmp_path / "gamed.html").read_text()  # type: ignore[union-attr]
    assert "Flagged candidates" in html and "<b>M0</b>: constant: one answer" in html


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (.ci/run installs the Debian package)")
def test_hostile_names_and_texts_are_shown_as_text_never_run(tmp_path):
    """Candidate names, prompt ids and texts with markup and script: the page shows them and runs nothing."""
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    names = ["<script>alert(1)</script>", 'a"b', "x'</script><b>", "plain"]
    prompts, responses = tmp_path / "data" / "p.jsonl", tmp_path / "data" / "r.jsonl"
    prompts.write_text(json.dumps({"id": "p</script>", "text": "Article </script><img src=x onerror=alert(2)>"}) + "\n")
    responses.write_text(
        "".join(
            json.dumps({"prompt_id": "p</script>", "candidate": n, "text": f"Summary {n} <<q={0.2 * k:.4f}>>", "human": {"coherence": k}})
            + "\n"
            for k, n in enumerate(names)
        )
    )
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="hostile", prompts=prompts, responses=responses, max_calls=12)
        path, _ = api.start(config)
    out = write_report(path, tmp_path / "hostile.html")
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("console", lambda m: problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("dialog", lambda d: (problems.append(f"script ran: {d.message}"), d.dismiss()))
        page.goto(out.as_uri())
        first = page.locator("details.judgment").first
        first.locator("summary").click()
        first.locator(".body h4").first.wait_for()  # filled by the toggle event, after the click returns
        text = first.inner_text()
        browser.close()
    assert problems == []
    assert "Article </script><img src=x onerror=alert(2)>" in text and "Summary" in text


PARSER_BREAKERS = [
    "<!--<script>",  # keeps a <script> block open past its own </script> (the double-escaped state)
    "<!-- never closed",
    "<script>x</script>",
    "</SCRIPT >",
    "<![CDATA[ ]]>",
    "</textarea><plaintext>",
    "</svg></details></body></html>",
    "&lt;script&gt; &#60; &amp",
    "\u2028line\u2029separators\x00nul",
]


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (.ci/run installs the Debian package)")
def test_texts_built_to_break_html_parsing_leave_the_page_working(tmp_path):
    """Issue #31 class 6: no text can change how the page parses — with texts made of the HTML
    parser's own state changes (not only <script>), every judgment still opens with its texts and
    the filter still works."""
    sync_api = pytest.importorskip("playwright.sync_api")
    (tmp_path / "data").mkdir()
    prompts, responses = tmp_path / "data" / "p.jsonl", tmp_path / "data" / "r.jsonl"
    prompts.write_text(json.dumps({"id": "p1", "text": "Article " + " ".join(PARSER_BREAKERS)}) + "\n")
    responses.write_text(
        "".join(
            json.dumps({"prompt_id": "p1", "candidate": f"M{k}", "text": f"{t} <<q={0.1 * k:.4f}>>", "human": {"coherence": k}}) + "\n"
            for k, t in enumerate(PARSER_BREAKERS)
        )
    )
    with FakeOpenAIServer(quality_behaviour) as server:
        config = write_config(tmp_path, server.url, name="breakers", prompts=prompts, responses=responses, max_calls=12)
        path, _ = api.start(config)
    out = write_report(path, tmp_path / "breakers.html")
    n_judgments = sqlite3.connect(path).execute("select count(*) from judgments").fetchone()[0]
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("console", lambda m: problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("dialog", lambda d: (problems.append(f"script ran: {d.message}"), d.dismiss()))
        page.goto(out.as_uri())
        judgments = page.locator("details.judgment")
        assert judgments.count() == n_judgments  # nothing swallowed by a comment or a runaway block
        shown = ""
        for k in range(judgments.count()):
            judgments.nth(k).locator("summary").click()
            judgments.nth(k).locator(".body h4").first.wait_for()
            shown += judgments.nth(k).inner_text()
        page.fill("#filter", "no judgment has this text")
        assert page.locator("details.judgment:visible").count() == 0
        page.fill("#filter", "")
        assert page.locator("details.judgment:visible").count() == n_judgments
        browser.close()
    assert problems == []
    asked = {c for (cs,) in sqlite3.connect(path).execute("select candidates from judgments") for c in json.loads(cs)}
    for k, text in enumerate(PARSER_BREAKERS):
        if f"M{k}" in asked:
            assert text.replace("\x00", "\ufffd").split("\u2028")[0][:8] in shown.replace("\x00", "\ufffd"), text
    assert "<!--<script>" in shown and "Article" in shown
