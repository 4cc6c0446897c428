"""Property tests: session file names, the Markus JSON file and the journal round-trip."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory._fs import validate_id
from markus_memory.errors import InvalidIdError
from markus_memory.layers.sessions import file_stem, id_from_file_stem
from markus_memory.layers.sessions._format import (
    COMPACTED_KEY,
    SessionDoc,
    parse_session,
    render_session,
)
from markus_memory.layers.sessions._journal import split_lines

from .sessions_support import make_store

# Text with the awkward characters: line and paragraph separators, NUL, quotes, astral planes.
awkward_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\n", "\r", "\u2028", "\u2029", "\x00", '"', "\\", "😀", ":"]),
    ),
    max_size=40,
)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), awkward_text, st.floats(-1e9, 1e9)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(awkward_text, inner, max_size=3)
    ),
    max_leaves=8,
)
parts = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, awkward_text),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, awkward_text),
)
tool_calls = st.lists(
    st.builds(
        lambda i, n, a: {"id": i, "name": n, "arguments": a},
        awkward_text,
        awkward_text,
        st.dictionaries(awkward_text, json_values, max_size=3),
    ),
    max_size=2,
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, object]:
    message: dict[str, object] = {
        "role": draw(st.sampled_from(["system", "user", "assistant", "tool"])),
        "content": draw(st.one_of(awkward_text, st.lists(parts, max_size=3))),
    }
    if draw(st.booleans()):
        message["toolCalls"] = draw(tool_calls)
    if draw(st.booleans()):
        message["toolCallId"] = draw(awkward_text)
    if draw(st.booleans()):
        message["metadata"] = draw(st.dictionaries(awkward_text, json_values, max_size=3))
    return message


def _valid_id(value: str) -> bool:
    try:
        validate_id("session id", value)
    except InvalidIdError:
        return False
    return True


@given(st.text(min_size=1, max_size=60).filter(_valid_id))
def test_file_stem_is_reversible_and_windows_safe(session_id: str) -> None:
    stem = file_stem(session_id)
    assert id_from_file_stem(stem) == session_id
    assert not any(ch in stem for ch in '<>:"|?*/\\')
    assert not stem.endswith(".")


@settings(max_examples=60)
@given(
    st.lists(messages(), max_size=5),
    awkward_text,
    st.dictionaries(st.sampled_from(["title", "userId"]), json_values, max_size=2),
    st.integers(0, 10**9),
)
def test_session_file_render_parse_round_trip(msgs, agent_id, extra, compacted) -> None:
    doc = SessionDoc(
        "sess_1_abcdef", agent_id, msgs, "2024-06-10T06:13:20.000Z", "x", extra, compacted
    )
    text = render_session(doc)
    assert parse_session(text) == doc
    assert (COMPACTED_KEY in json.loads(text)) == (compacted > 0)
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False)


@given(st.binary(max_size=200))
def test_split_lines_returns_only_complete_lines(data: bytes) -> None:
    lines, used = split_lines(data)
    assert b"".join(line + b"\n" for line in lines) == data[:used]
    assert b"\n" not in data[used:]


@settings(max_examples=40, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=8), st.integers(0, 200))
def test_journal_round_trip_and_torn_tail(msgs, cut) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = make_store(root)
        sid = store.create().id
        for message in msgs:
            store.append(sid, message)
        stored = list(store.get(sid).messages)
        assert stored == msgs
        # Replay from the journal alone gives the same messages.
        assert list(make_store(root).get(sid).messages) == stored
        # Tear the last line anywhere: every earlier message survives, the torn one is gone.
        journal = store.directory / f"{sid}.jsonl"
        data = journal.read_bytes()
        last_line_start = data.rstrip(b"\n").rfind(b"\n") + 1
        torn = last_line_start + cut % (len(data) - last_line_start)
        journal.write_bytes(data[:torn])
        expected = stored[:-1]
        assert list(make_store(root).get(sid).messages) == expected
        # Checkpoint and reload: the Markus JSON carries the same messages.
        again = make_store(root)
        again.get(sid)
        again.close()
        assert list(make_store(root).get(sid).messages) == expected
        store.close()


@given(st.sampled_from([None, -3, True, "7", 2.5, [1]]))
def test_a_malformed_compacted_count_reads_as_zero(value: object) -> None:
    doc = SessionDoc("sess_1_abcdef", "a", [], "x", "y")
    data = json.loads(render_session(doc))
    data[COMPACTED_KEY] = value
    assert parse_session(json.dumps(data)).compacted == 0
