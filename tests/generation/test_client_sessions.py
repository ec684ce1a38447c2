"""A run leaves no HTTP session of litellm's open when its event loop ends (each one would be
reported as an "Unclosed client session" when it is collected)."""

from __future__ import annotations

import gc
import logging

from genkit import BaseModelWriters, model_campaign
from orchestrator import api
from orchestrator.judging.testserver import FakeOpenAIServer


def test_a_run_closes_the_http_sessions_it_opened(tmp_path, caplog):
    import litellm

    caplog.set_level(logging.ERROR, logger="asyncio")
    with FakeOpenAIServer(behaviour=BaseModelWriters()) as server:
        for k in range(2):  # a second loop in the same process opens sessions of its own
            config = model_campaign(tmp_path / str(k), server.url, prompts=3, max_calls=8)
            # one model asked for plain-text completions (litellm makes a client per call for them)
            config.write_text(
                config.read_text().replace(
                    'model = "openai/writer-bad"\n', 'model = "openai/writer-bad"\nprompt_format = "completion"\n', 1
                )
            )
            api.start(config, cache=False)
            gc.collect()
            assert not litellm.in_memory_llm_clients_cache.cache_dict  # closed and forgotten
    assert "Unclosed client session" not in caplog.text and "Unclosed connector" not in caplog.text
