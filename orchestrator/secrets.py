"""Keep credentials out of everything the orchestrator stores, exports or prints.

litellm reads API keys from environment variables (``OPENAI_API_KEY``, a profile's
``api_key_env``, ...). Providers echo them in error messages ("Incorrect API key provided:
sk-..."), and a judge may quote anything it was sent. Before a judgment is committed, and before
an error is printed, every value of a secret-looking environment variable (name ending in
``API_KEY``, ``_KEY``, ``_TOKEN``, ``_SECRET``, ``PASSWORD``, ``_PASS``, ``_PASSWD``, ``_PWD``,
``_AUTH``, ``_CREDENTIAL(S)``, ``_COOKIE`` or ``_SESSION``; 8+ characters), of every variable a
judge profile names in ``api_key_env`` (whatever its name; 4+ characters), and the password of
any URL-valued variable is replaced by ``[REDACTED NAME]`` — by value, wherever it appears — and
key-shaped strings (``sk-…``, ``Bearer …``, credentials in URLs) by ``[REDACTED]``. A run's
stored config has its URL credentials redacted too: ``resume --api-base`` gives them back.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["redact", "redact_json", "secret_values", "register_secret_env", "lazy_secrets"]

_REGISTERED: set[str] = set()
"""Environment variables named by judge profiles (``api_key_env``), whatever their names."""


def register_secret_env(name: str | None) -> None:
    """Treat this environment variable's value as a secret (a judge profile's ``api_key_env``)."""
    if name:
        _REGISTERED.add(name)


_SECRET_NAME = re.compile(
    r"(API_?KEY|_KEY|_TOKEN|_SECRET|SECRET_KEY|ACCESS_KEY|PASSWORD|_PASS|_PASSWD|_PWD|_AUTH|"
    r"_CREDENTIALS?|_COOKIE|_SESSION)$",
    re.IGNORECASE,
)
_KEY_SHAPES = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{16,}|(?<=Bearer )[A-Za-z0-9._\-]{16,}|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")


_URL_PASSWORD = re.compile(r"://[^/\s:@]+:([^/\s@]+)@")


def secret_values(extra_names: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """``(name, value)`` of the secret environment variables, longest value first: every variable
    a profile or config names (whatever its name; 4+ characters) and every secret-looking one
    (8+ characters, so that short everyday values are not blanked out of judgments)."""
    found = set()
    for name, value in os.environ.items():
        named = name in extra_names or name in _REGISTERED
        if (named and len(value) >= 4) or (_SECRET_NAME.search(name) and len(value) >= 8):
            found.add((name, value))
        # credentials inside a URL-valued variable (https://user:pass@host): the password alone too
        for password in _URL_PASSWORD.findall(value):
            if len(password) >= 4:
                found.add((name, password))
    return sorted(found, key=lambda nv: -len(nv[1]))


MIN_SECRET_CHARS = 4
"""No secret is shorter (:func:`secret_values`), nor a key shape: shorter strings are left alone."""


class _Lazy:
    """The secret values, read from the environment on first use (most strings need none)."""

    def __init__(self, extra_names: tuple[str, ...] = ()):
        self.extra_names = extra_names
        self.values: list[tuple[str, str]] | None = None

    def get(self) -> list[tuple[str, str]]:
        if self.values is None:
            self.values = secret_values(self.extra_names)
        return self.values


def redact(text: str | None, extra_names: tuple[str, ...] = (), *, values: "_Lazy | list[tuple[str, str]] | None" = None) -> str | None:
    """``text`` with every secret value and key-shaped string replaced (``values``: secrets read
    once by a caller that redacts many strings)."""
    if not text or len(text) < MIN_SECRET_CHARS:
        return text
    found = secret_values(extra_names) if values is None else values.get() if isinstance(values, _Lazy) else values
    for name, value in found:
        if value in text:
            text = text.replace(value, f"[REDACTED {name}]")
    return _KEY_SHAPES.sub("[REDACTED]", text)


def lazy_secrets() -> _Lazy:
    """Secret values for many :func:`redact` calls, read from the environment at most once."""
    return _Lazy()


def redact_json(obj: Any, *, values: "_Lazy | list[tuple[str, str]] | None" = None) -> Any:
    """The same on every string inside a JSON-like structure (a raw provider response); the
    environment is read at most once for the whole structure."""
    if values is None:
        values = _Lazy()
    if isinstance(obj, str):
        return redact(obj, values=values)
    if isinstance(obj, (list, tuple)):
        return [redact_json(x, values=values) for x in obj]
    if isinstance(obj, dict):
        return {k: redact_json(v, values=values) for k, v in obj.items()}
    return obj
