"""The reliability catalog's parts (tests/reliability/test_reliability_catalog.py): a case,
and the judges that misbehave."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from judgekit import quality_behaviour
from orchestrator.judging.testserver import completion, logprob_entry


@dataclass
class Case:
    """One catalog entry: run ``args`` (``{run}``, ``{dir}`` … filled in) and check the outcome."""

    klass: int
    name: str
    args: list[str]
    code: int = 2
    message: str = ""
    """Must appear (case-insensitive) in stderr (or stdout when ``code`` is 0 and ``stdout`` is set)."""
    setup: Callable[[dict], None] | None = None
    check: Callable[[dict, subprocess.CompletedProcess], str | None] | None = None
    """Extra check: returns a complaint, or None when all is well."""
    env: dict[str, str] = field(default_factory=dict)
    preexec: Callable[[], None] | None = None
    readonly: bool = False
    """Needs read-only storage (``{ro}``), which the test makes with a read-only mount or chattr."""
    one_line: bool = True
    """stderr holds exactly one non-blank line (errors); warnings and progress may add lines otherwise."""
    no_run_file: str | None = None
    """This run file must not exist afterwards (validation before creation)."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "-"


# -- judges that misbehave -------------------------------------------------------------------------


def _pairwise(body, *, alts=None, usage=None, text=None):
    status, headers, payload = quality_behaviour(body)
    if alts is not None:
        payload["choices"][0]["logprobs"] = {"content": [{"token": "A", "logprob": -0.1, "top_logprobs": alts}]}
    if usage is not None:
        payload["usage"] = usage
    if text is not None:
        payload["choices"][0]["message"]["content"] = text
        payload["choices"][0].pop("logprobs", None)
    return status, headers, payload


def nan_logprobs(body):
    """Half the alternatives are NaN: the valid ones still give the answer."""
    return _pairwise(body, alts=[{"token": "A", "logprob": float("nan")}, {"token": "B", "logprob": -1.2}, {"token": "A", "logprob": -0.4}])


def all_nan_logprobs(body):
    """Every log-probability NaN, the text says "A": the verdict is parsed, nothing NaN stored."""
    payload = completion(
        "A",
        [
            {
                "token": "A",
                "logprob": float("nan"),
                "top_logprobs": [{"token": "A", "logprob": float("nan")}, {"token": "B", "logprob": float("nan")}],
            }
        ],
    )
    return 200, {}, payload


def huge_logprobs(body):
    return _pairwise(
        body,
        alts=[
            {"token": "A", "logprob": 1e308},
            {"token": "B", "logprob": float("inf")},
            {"token": "A", "logprob": -0.3},
            {"token": "B", "logprob": -1.5},
        ],
    )


def negative_usage(body):
    return _pairwise(body, usage={"prompt_tokens": -1_000_000, "completion_tokens": -5, "total_tokens": -1_000_005})


def absurd_usage(body):
    return _pairwise(body, usage={"prompt_tokens": 10**15, "completion_tokens": 10**13, "total_tokens": 10**15})


def low_mass(body):
    """Most probability on a non-option token ("I"): renormalised, and flagged."""
    return _pairwise(body, alts=[{"token": "I", "logprob": -0.05}, {"token": "A", "logprob": -3.5}, {"token": "B", "logprob": -4.0}])


def chatty(body):
    """Never an option: every answer is unparsed."""
    return 200, {}, completion("I would rather not say.", [logprob_entry("I", [("I", 0.9), ("We", 0.1)])])


def bad_request(body):
    return 400, {}, {"error": {"message": "this model does not exist"}}


def retry_after(value: str):
    seen = {}

    def behaviour(body):
        key = json.dumps(body.get("messages"))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 1:
            return 429, {"Retry-After": value}, {"error": {"message": "slow down"}}
        return quality_behaviour(body)

    return behaviour


def echo(secret: str):
    def behaviour(body):
        status, headers, payload = quality_behaviour(body)
        payload["choices"][0]["message"]["content"] += f" (I was told {secret})"
        return status, headers, payload

    return behaviour


BEHAVIOURS = {
    "nan": nan_logprobs,
    "all_nan": all_nan_logprobs,
    "huge": huge_logprobs,
    "neg_usage": negative_usage,
    "absurd_usage": absurd_usage,
    "low_mass": low_mass,
    "chatty": chatty,
    "bad_request": bad_request,
    "ra_nan": retry_after("nan"),
    "ra_inf": retry_after("inf"),
    "ra_huge": retry_after("1e300"),
    "echo_auth": echo("tok-FOO-AUTH-5e2b7"),
    "echo_pass": echo("pw-MY-PASS-91x"),
    "echo_odd": echo("oddly-named-secret-77"),
    "echo_url": echo("urlpass-42q"),
}
