"""What a cached session costs: its messages share one copy of their keys and roles."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.layers.sessions_support import make_store

TURNS = [("user", "first question"), ("assistant", "an answer"), ("user", "second question")]


def assert_shared(messages: list[dict[str, object]]) -> None:
    """Every message's keys, and equal roles, are the same string objects."""
    first = messages[0]
    for other in messages[1:]:
        for key in ("role", "content"):
            (mine,) = [k for k in first if k == key]
            (theirs,) = [k for k in other if k == key]
            assert mine is theirs, key
    users = [m["role"] for m in messages if m["role"] == "user"]
    assert users[0] is users[1]


@pytest.mark.parametrize("reload", ["appended", "checkpoint", "journal"])
def test_cached_messages_share_their_key_and_role_strings(tmp_path: Path, reload: str) -> None:
    """A server holds thousands of parsed messages per open session: each parse made new
    ``"role"``/``"content"``/``"user"`` strings, a third of a short turn's memory. Appended,
    loaded from a checkpoint, or replayed from the journal, they are shared."""
    store = make_store(tmp_path)
    sid = store.create().id
    for role, text in TURNS:
        store.append(sid, {"role": role, "content": text})
    if reload == "checkpoint":
        store.close()
    if reload != "appended":  # "journal": not closed, so the next load replays the journal
        store = make_store(tmp_path)
    messages = store.recent(sid, len(TURNS))
    assert [(m["role"], m["content"]) for m in messages] == TURNS
    assert_shared([dict(m) for m in messages])
