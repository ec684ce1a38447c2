"""The event loop of one piece of async work, and litellm's HTTP clients closed before it ends.

litellm keeps the aiohttp sessions it opens in a module-level cache; each ``asyncio.run`` ends its
loop with them open, and Python reports every one as an "Unclosed client session" when it is
collected. :func:`run_closing_clients` closes them in the loop that made them and empties the
cache, so the next loop opens its own."""

from __future__ import annotations

import asyncio
import inspect
import sys
from typing import Any, Awaitable, Callable, TypeVar

__all__ = ["close_clients", "owned_client", "run_closing_clients"]

T = TypeVar("T")

_OWNED: list[Any] = []
"""Clients the package made itself for calls litellm would otherwise give a new, never-closed
client each (its OpenAI text completions): closed with litellm's own."""


def owned_client(client: T) -> T:
    """``client`` (with an ``async close()``), closed by :func:`close_clients` when its loop ends."""
    _OWNED.append(client)
    return client


async def close_clients() -> None:
    """Close and forget litellm's cached HTTP clients and the package's own (nothing when litellm
    was never imported)."""
    while _OWNED:
        try:
            await _OWNED.pop().close()
        except Exception:  # already closed
            pass
    if "litellm" not in sys.modules:
        return
    import litellm

    cleanup: Callable[[], Awaitable[Any]] | None = None
    try:
        from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients as cleanup
    except ImportError:  # an older litellm: close what its cache holds here
        pass
    cache = getattr(litellm, "in_memory_llm_clients_cache", None)
    try:
        if cleanup is not None:
            await cleanup()
        else:
            for client in list(getattr(cache, "cache_dict", {}).values()):
                close = getattr(client, "aclose", None) or getattr(client, "close", None)
                done = close() if callable(close) else None
                if inspect.isawaitable(done):
                    await done
    except Exception:  # a client already closed, or one of a kind this litellm does not know
        pass
    if cache is not None and hasattr(cache, "flush_cache"):
        cache.flush_cache()


def run_closing_clients(work: Awaitable[T]) -> T:
    """``asyncio.run(work)``, with :func:`close_clients` in the same loop when it ends (also on
    an error or an interrupt)."""

    async def main() -> T:
        try:
            return await work
        finally:
            await close_clients()

    return asyncio.run(main())
