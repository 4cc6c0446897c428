"""The flush preflight decision (the original's rule) and the message-count preconditions."""

from __future__ import annotations

import pytest

from markus_memory.config import Limits
from markus_memory.flush import render_transcript, should_memory_flush_preflight, skip_reason

BASE = "chat_agent1_123"


@pytest.mark.parametrize("usage", [90, 75, 75.0, 100])
def test_fires_when_usage_crosses_the_threshold(usage: float) -> None:
    assert should_memory_flush_preflight(BASE, usage, False)


@pytest.mark.parametrize("usage", [74, 74.9, 10, 0])
def test_does_not_fire_below_the_threshold(usage: float) -> None:
    assert not should_memory_flush_preflight(BASE, usage, False)


def test_does_not_fire_twice_for_the_same_session() -> None:
    assert not should_memory_flush_preflight(BASE, 90, True)


def test_never_fires_for_sys_sessions() -> None:
    assert not should_memory_flush_preflight("sys_agent1_999", 90, False)


def test_does_not_fire_when_no_prior_usage_is_known() -> None:
    assert not should_memory_flush_preflight(BASE, None, False)


@pytest.mark.parametrize("session", [None, ""])
def test_does_not_fire_without_a_session_id(session: str | None) -> None:
    assert not should_memory_flush_preflight(session, 90, False)


def test_honors_a_custom_threshold() -> None:
    assert should_memory_flush_preflight(BASE, 50, False, threshold=40)
    assert not should_memory_flush_preflight(BASE, 50, False, threshold=60)


LONG = "x" * 101


def _session(n: int, assistant_at: int | None, content: object = LONG) -> list[dict[str, object]]:
    msgs: list[dict[str, object]] = [{"role": "user", "content": f"msg {i}"} for i in range(n)]
    if assistant_at is not None:
        msgs[assistant_at] = {"role": "assistant", "content": content}
    return msgs


def test_needs_twenty_messages() -> None:
    assert "19 messages" in (skip_reason(_session(19, 18), Limits()) or "")
    assert skip_reason(_session(20, 19), Limits()) is None


def test_needs_a_substantial_assistant_message_in_the_last_twenty() -> None:
    limits = Limits()
    assert skip_reason(_session(40, 20), limits) is None
    assert skip_reason(_session(40, 19), limits) is not None  # just outside the window
    assert skip_reason(_session(40, 39, "x" * 100), limits) is not None  # not > 100
    assert skip_reason(_session(40, 39, [{"type": "text", "text": LONG}]), limits) is not None
    assert skip_reason(_session(40, None), limits) is not None


def test_transcript_keeps_the_newest_messages_within_its_budget() -> None:
    msgs = [{"role": "user", "content": f"m{i} " + "x" * 50} for i in range(10)]
    msgs.append(
        {
            "role": "assistant",
            "content": "y" * 5000,
            "toolCalls": [{"id": "c", "name": "memory_save", "arguments": {"content": "z"}}],
        }
    )
    text = render_transcript(msgs, max_chars=100, total_chars=400)
    blocks = text.split("\n\n")
    assert blocks[-1].startswith("assistant: " + "y" * 100 + " …[clipped]")
    assert "memory_save" in blocks[-1]
    assert "m9 " in text and "m0 " not in text and len(text) <= 400
    assert render_transcript(msgs[:2], 100).startswith("user: m0 ")
