"""Hypothesis strategies for markdown-layer property tests: text full of structure look-alikes."""

from __future__ import annotations

from hypothesis import strategies as st

from markus_memory._fs import validate_key
from markus_memory.errors import InvalidIdError

FRAGMENTS = [
    "## x",
    "## Current Situational Awareness (latest triage)",
    "### obs_1 2026-01-01",
    "<!-- managed: cpp -->",
    "<!-- managed: system -->",
    "<!-- updated: 2020-01-01T00:00:00.000Z -->",
    "<!-- updatedAt: 2020-01-01 -->",
    "updatedAt: 2001-02-03",
    "$1",
    "\\1",
    "\\",
    "\\## y",
    "#",
    "<!--",
    "\r\n",
    "\r",
    "\n",
    "\n\n",
    "\t",
    " ",
    "😀",
    "中文笔记",
    "# Notebook",
    "# State",
]

texts = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), min_size=1, max_size=10
).map("".join)


def _is_key(value: str) -> bool:
    try:
        validate_key("key", value)
    except InvalidIdError:
        return False
    return True


keys = st.one_of(
    st.sampled_from(["current-task", "## nested", "<!-- managed: cpp -->", "中文", "a -->"]),
    st.text(min_size=1, max_size=24),
).filter(_is_key)
