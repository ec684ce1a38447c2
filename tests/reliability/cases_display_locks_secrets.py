"""The reliability catalog, classes 5–8: display injection, locks and storage, secrets, small
hangs and silences."""

from __future__ import annotations

import json
import os
from pathlib import Path

import childkit
from catalog_checks import (
    _corrupt_copy,
    _crash_log,
    _credentials_check,
    _credentials_setup,
    _dataset,
    _dup_log,
    _edit_config,
    _fsize_limit,
    _full_disk_check,
    _full_disk_setup,
    _hardlink,
    _items_distinct,
    _items_log,
    _json_lines,
    _link,
    _lock_holder,
    _record_redacted,
    _run_ok,
    _same_as_log,
    _secret_absent,
    _write,
)
from catalog_kit import Case

from judgekit import write_config


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


def cases_display_locks_secrets() -> list[Case]:
    c: list[Case] = []
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
