"""The reliability catalog, classes 9–15 (the cache, batches, budgets, secrets, the report, importers): each case the real
``orchestrator`` command in a child process on real files against real HTTP servers on 127.0.0.1
(the world and the runner of :mod:`test_reliability_catalog`): the right exit code, one clear line
on errors, no traceback, nothing stored changed.

Classes: 9 the cache answers only for who answered and
never blames the judge, 10 batches, 11 spending more than asked and success without work,
12 signals while waiting (tests/reliability/test_reliability_signals.py), 13 secrets in new places,
14 the report broken by the data, 15 importers and readers of peers' messy files.

The classes that need several servers or a signal are tested beside it, with the same real parts:
tests/reliability/test_reliability_cache.py, test_reliability_batches.py, test_reliability_budget.py,
test_reliability_signals.py, test_reliability_fuzz.py and test_report.py.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from cases_importers import importer_cases
from catalog_kit import Case
from catalog_setups import (
    _both,
    _breakers_data,
    _cached_run_ok,
    _damaged_cache,
    _file,
    _no_identities,
    _report_parses,
    _run_state,
    _spent_run,
)
from catalog_world import make_world, run_case

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The catalog's world (:func:`catalog_world.make_world`): its servers, files and runs."""
    yield from make_world(tmp_path_factory)


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
    c += importer_cases()
    return c


def test_the_catalog_covers_classes_nine_to_fifteen():
    cases = catalog()
    assert len(cases) >= 40
    assert {case.klass for case in cases} == {9, 11, 14, 15}
    assert len({case.name for case in cases}) == len(cases)


def test_catalog_classes_nine_to_fifteen(world):
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
