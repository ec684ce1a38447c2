"""Help texts in plain words: no Python type names, no braces in the usage line."""

from __future__ import annotations

import pytest
import typer

from orchestrator.cli import app, main


def _commands() -> list[list[str]]:
    root = typer.main.get_command(app)
    out = []
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", None)
        out += [[name, sub] for sub in subcommands] if subcommands else [[name]]
    return out


@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_every_help_shows_plain_metavariables(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    try:
        main([*command, "--help"])
    except SystemExit as exc:  # help returns, or exits 0, depending on typer's release
        assert exc.code in (0, None)
    text = capsys.readouterr().out
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert "{" not in usage, usage
    for internal in ("<bool>", "<path>", "<int>", "<str>", "<float>", "<list["):
        assert internal not in text, (command, internal)


def test_a_bad_input_is_refused_before_the_heavy_stack_is_imported(tmp_path):
    """Issue #32: argument and file errors come fast — `rank` of a missing file and `run` of a
    config whose data do not parse or whose strategy is unknown exit 2 with one line, and the
    process never imported torch, litellm, JAX or matplotlib to say so."""
    import subprocess
    import sys

    from judgekit import write_config

    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "x"\n')
    (tmp_path / "r.jsonl").write_text("")
    broken = write_config(tmp_path, "http://127.0.0.1:9/v1", name="broken", prompts=prompts, responses=tmp_path / "r.jsonl")
    strategy = write_config(
        tmp_path, "http://127.0.0.1:9/v1", name="psychic", prompts=prompts, responses=tmp_path / "r.jsonl", strategy="psychic"
    )
    probe = (
        "import sys\nfrom orchestrator.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n"
        "    heavy = sorted(m for m in ('torch', 'litellm', 'jax', 'matplotlib') if m in sys.modules)\n"
        "    print('heavy:', ','.join(heavy), file=sys.stderr)\n    raise\n"
    )
    for args, message in (
        (["rank", str(tmp_path / "missing.sqlite")], "missing.sqlite"),
        (["run", str(broken)], "not valid JSON"),
        (["run", str(strategy)], "unknown strategy 'psychic'"),
    ):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        error, heavy = [line for line in done.stderr.splitlines() if line.strip()]
        assert message in error and "Traceback" not in done.stderr
        assert heavy == "heavy: ", (args, heavy)
