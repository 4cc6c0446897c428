"""The dream through a real adapter against a local fake OpenAI-compatible server."""

from __future__ import annotations

import json

from markus_memory.dream import dream, dream_history
from markus_memory.llm import OpenAIChatModel, RetryPolicy
from tests.dream.conftest import save
from tests.fake_llm_server import Reply, fake_server


def test_dream_over_http_sends_no_tools_and_applies_the_reply(mem, clock) -> None:
    ids = save(mem, clock, "keep this", "drop this duplicate", "drop this duplicate too")
    body = {"choices": [{"message": {"content": json.dumps({"remove": [ids[1]]})}}]}
    with fake_server() as server:
        server.replies.append(Reply(body=body))
        model = OpenAIChatModel(
            "m", base_url=server.url + "/v1", retry=RetryPolicy(backoff_seconds=0)
        )
        report = dream(mem, model)
    assert report.removed == (ids[1],)
    assert "tools" not in server.requests[0].body


def test_regression_14_1_11_a_hanging_endpoint_fails_the_dream_within_its_deadline(
    mem, clock
) -> None:
    save(mem, clock, "a", "b")
    before = mem.paths.knowledge.read_bytes()
    with fake_server() as server:
        server.replies += [Reply(body={}, delay=10)] * 3
        model = OpenAIChatModel("m", base_url=server.url + "/v1", retry=RetryPolicy(max_attempts=1))
        report = dream(mem, model, timeout=0.3)
    assert report.status == "failed" and "timed out" in (report.error or "")
    assert mem.paths.knowledge.read_bytes() == before
    assert dream_history(mem)[0].status == "failed"
