"""Properties of the transcript line reader and recorder: JSONL written is read back as it was,
and any object line is recorded (shortened when too large), never refused, each once."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory import open_agent
from markus_memory.config import Limits, Settings
from markus_memory.integrations._claude_lines import read_lines, record_lines

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
scalars = st.none() | st.booleans() | st.integers() | text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)
objects = st.dictionaries(text, values, max_size=5)
EXAMPLES = itertools.count()


@given(st.lists(objects, max_size=8))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
def test_jsonl_written_is_read_back_as_it_was(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    read = read_lines(path)
    assert [line.entry for line in read.lines] == rows and read.problems == ()
    distinct = {json.dumps(r, sort_keys=True) for r in rows}
    assert len({line.identity for line in read.lines}) == len(distinct)


big = st.text(st.characters(exclude_categories=("Cs",)), min_size=0, max_size=9000)
lines = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["user", "assistant", "summary"]), "payload": big},
        optional={"message": st.fixed_dictionaries({"role": st.just("user"), "content": big})},
    ),
    min_size=1,
    max_size=6,
)


@given(lines)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=25)
def test_any_object_line_is_recorded_once_within_the_cap(
    tmp_path: Path, rows: list[dict[str, Any]]
) -> None:
    cap = 20_000  # small, so the generated lines often pass it
    limits = dataclasses.replace(Limits(), session_message_max_bytes=cap)
    config = dataclasses.replace(Settings.from_env(home=tmp_path / "h"), limits=limits)
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    read = read_lines(path)
    with open_agent("a", settings=config) as mem:
        sid = f"s{next(EXAMPLES)}"  # one agent for every example, a new session each
        first = record_lines(mem, sid, read)
        again = record_lines(mem, sid, read)
        session = mem.sessions.get(sid)
    distinct = len({json.dumps(r, sort_keys=True) for r in rows})
    assert first.problems == () and first.appended == distinct and again.appended == 0
    assert session is not None and len(session.messages) == distinct
    for message in session.messages:
        encoded = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        assert len(encoded.encode()) <= cap
        shortened = "shortened_from_bytes" in message["metadata"]["claude_code"]
        assert shortened == ("[shortened by markus-memory: " in encoded)
    assert first.shortened == sum(
        "shortened_from_bytes" in m["metadata"]["claude_code"] for m in session.messages
    )
