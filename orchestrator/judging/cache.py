"""A judge that answers from the judgment cache before it pays (:mod:`orchestrator.store.cache`).

:class:`CachingJudge` wraps any judge: a request whose answer is cached comes back at once, costing
nothing (``cached = True``, tokens and USD 0, what it was paid the first time in ``note``); any other
goes to the wrapped judge and, when it succeeds, is cached. The engine sees an ordinary judge.

What makes two requests the same (:func:`cache_key`): the judge's identity (:func:`judge_identity`:
the provider class a profile names, model, address — the embedded model's name rather than its
port —, logprobs settings, samples, prefill, every extra sampling parameter), the template's digest, the rendered messages and the
repeat index. A judge sampled at temperature > 0 thus gives repeat 0 and repeat 1 separate samples,
as without the cache, while a re-run asks neither again. The run's name, the judge's profile name,
timeouts and prices are not part of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Callable

from ..errors import OrchestratorError
from ..store.cache import JudgmentCache
from .answers import check_answer
from .client import Judge, JudgeProfile, JudgeRequest, Judgment

__all__ = ["CachingJudge", "cache_key", "default_cache_path", "judge_identity", "open_cache"]

_WITHOUT_CREDENTIALS = re.compile(r"://[^/\s@]*@")

CACHE_ENV = "ORCHESTRATOR_JUDGMENT_CACHE"
"""A path for the cache file, or ``off`` (the tests set it so)."""


def default_cache_path() -> Path:
    """``$ORCHESTRATOR_JUDGMENT_CACHE``, else ``judgments.sqlite`` in the user cache directory
    (:func:`orchestrator.paths.cache_dir`)."""
    from ..paths import cache_dir

    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured and configured.lower() not in ("off", "0", "false", "no"):
        return Path(configured).expanduser()
    return cache_dir() / "judgments.sqlite"


def open_cache(setting: str | Path | bool | None) -> JudgmentCache | None:
    """The cache a run uses: ``False`` none; a path that file; ``None``/``True`` the default (none
    when ``$ORCHESTRATOR_JUDGMENT_CACHE`` is ``off``).

    Raises:
        OrchestratorError: the file is not a judgment cache or cannot be created.
    """
    if setting is False:
        return None
    if setting is None or setting is True:
        if os.environ.get(CACHE_ENV, "").strip().lower() in ("off", "0", "false", "no"):
            return None
        return JudgmentCache(default_cache_path())
    return JudgmentCache(Path(setting))


def judge_identity(profile: JudgeProfile, api_base: str | None) -> dict[str, Any]:
    """What about a judge decides its answers (see the module docstring). ``api_base``: the run's
    ``dispatch.api_base`` (it replaces every profile's address, the embedded judge's too); without
    it the judge is reached at ``$ORCHESTRATOR_API_BASE`` or the profile's own ``api_base``, and an
    embedded judge at its local server, whatever port that has."""
    if profile.embedded and not api_base:
        address = f"embedded:{profile.embedded}"
    elif profile.deployments and not api_base:
        address = "deployments:" + ",".join(sorted(d.api_base for d in profile.deployments))
    else:
        address = api_base or os.environ.get("ORCHESTRATOR_API_BASE") or profile.api_base or ""
    # credentials in an address (https://user:pass@host) decide who pays, not what is answered:
    # they are no part of the identity, which runs store (a rotated password keeps the cache)
    address = _WITHOUT_CREDENTIALS.sub("://", address)
    # a provider from outside the package is its own judge, whatever model it names (often none)
    provider = {"provider": profile.provider} if profile.provider else {}
    return {
        **provider,
        "model": profile.model,
        "address": address,
        "logprobs": profile.logprobs,
        "top_logprobs": profile.top_logprobs if profile.logprobs else None,
        "samples": 1 if profile.logprobs else profile.samples,
        "prefill": profile.prefill,
        "params": profile.params,
    }


def _asked(identity: dict[str, Any], request: Any) -> dict[str, Any]:
    """The judge's identity with the completions this request asks (one at a time in adaptive sampling)."""
    samples = getattr(request, "samples", None)
    return (
        identity if samples is None or identity.get("samples") == samples or identity.get("logprobs") else {**identity, "samples": samples}
    )


def cache_key(identity: dict[str, Any], template_digest: str, messages: list[dict[str, str]], repeat: int) -> str:
    """The content address of one request (sha256 over a canonical JSON of its parts)."""
    canonical = json.dumps(
        {"judge": identity, "template": template_digest, "messages": messages, "repeat": repeat},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class CachingJudge:
    """``inner`` behind the cache; ``identity`` from :func:`judge_identity`.

    A cache that cannot be read (a damaged file, a disk error) is bypassed from the first failed
    read on — every request goes to the judge, as without a cache — and ``warn`` is told once: a
    broken cache is never charged to the judge as a failed call."""

    def __init__(self, inner: Judge, identity: dict[str, Any], cache: JudgmentCache, warn: Callable[[str], None] | None = None):
        self.inner = inner
        self.name = inner.name
        self.identity = identity
        self.cache = cache
        self.hits = 0
        self.misses = 0
        self.write_errors = 0
        self.broken: str | None = None
        self._warn = warn

    def _bypass(self, exc: Exception) -> None:
        if self.broken is None:
            self.broken = f"{self.cache.path}: the judgment cache cannot be read ({exc}); going on without it"
            if self._warn is not None:
                self._warn(self.broken)

    async def judge(self, request: JudgeRequest) -> Judgment:
        hit = self.lookup(request)
        if hit is not None:
            return hit
        judgment = await self.inner.judge(request)
        self.remember(request, judgment)
        return judgment

    def quote(self, request: JudgeRequest) -> tuple[int, int, float] | None:
        """The wrapped judge's quote for ``request`` (a cached answer costs less, never more)."""
        quote = getattr(self.inner, "quote", None)
        return quote(request) if quote is not None else None

    def lookup(self, request: JudgeRequest) -> Judgment | None:
        """The cached answer to ``request`` as a free judgment (``cached``), or None (a miss)."""
        if self.broken is not None:
            self.misses += 1
            return None
        key = cache_key(_asked(self.identity, request), request.template.digest, request.messages, request.repeat)
        try:
            cached = self.cache.get(key)
            judgment = None if cached is None else self._as_judgment(request, cached)
        except (sqlite3.Error, OSError, ValueError, TypeError, AttributeError) as exc:  # damaged file or entry
            self._bypass(exc)
            judgment = None
        if judgment is None:
            self.misses += 1
            return None
        self.hits += 1
        return judgment

    def _as_judgment(self, request: JudgeRequest, cached: dict[str, Any]) -> Judgment:
        paid = f"${float(cached.get('cost_usd') or 0.0):.6f}, {int(cached.get('prompt_tokens') or 0) + int(cached.get('completion_tokens') or 0)} tokens"
        return Judgment.model_validate(
            {
                **cached,
                "key": request.key,
                "judge": self.name,
                "prompt_id": request.prompt_id,
                "candidates": list(request.candidates),
                "cost_usd": 0.0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "latency_s": 0.0,
                "cached": True,
                "note": f"from the judgment cache (paid {paid} when first asked)",
            }
        )

    def remember(self, request: JudgeRequest, judgment: Judgment) -> None:
        """Keep a successful, paid answer that passes the checks every stored answer passes
        (:mod:`.answers`; secrets redacted as in the run file)."""
        if judgment.status != "ok" or judgment.cached or self.broken is not None:
            return
        judgment = check_answer(request, judgment)
        if judgment.status != "ok":
            return
        from ..secrets import redact_json

        # every string in it, as the run file does (a provider may quote a key anywhere)
        stored = redact_json(judgment.model_dump(exclude={"key", "judge", "retryable", "retry_after_s", "error", "error_type"}))
        key = cache_key(_asked(self.identity, request), request.template.digest, request.messages, request.repeat)
        try:
            self.cache.put(
                key,
                model=str(self.identity.get("model", "")),
                template_digest=request.template.digest,
                repeat=request.repeat,
                judgment=stored,
            )
        except (sqlite3.Error, OrchestratorError):  # a cache that cannot be written (full disk, locked) must not lose a paid judgment
            self.write_errors += 1
