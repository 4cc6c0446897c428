"""Journal replay (issue #12 item 2): every intact record is kept at its index, only damaged
lines are set aside, and the numbering never goes back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markus_memory.config import Limits
from markus_memory.layers.sessions._journal import (
    DAMAGED_KEY,
    journal_record,
    parse_journal_record,
    replay,
)

from .sessions_support import make_store, user

DAMAGE = st.sampled_from([b"", b"garbage", b'{"i":', b"[1,2]", b'{"i":"3","t":"x","m":{}}'])


def _line(index: int) -> bytes:
    return journal_record(index, "2024-01-01T00:00:00.000Z", f'{{"n":{index}}}').rstrip(b"\n")


@given(st.integers(0, 5), st.integers(1, 12), st.data())
def test_item2_replay_keeps_every_intact_record_at_its_index(start, count, data) -> None:  # type: ignore[no-untyped-def]
    broken = data.draw(st.sets(st.integers(0, count - 1)))
    lines = [data.draw(DAMAGE) if n in broken else _line(start + n) for n in range(count)]
    out = replay(lines, start)
    assert len(out.messages) == count  # the next append gets start + count: nothing reused
    for n, message in enumerate(out.messages):
        if n in broken:
            assert message["metadata"] == {DAMAGED_KEY: True}
        else:
            assert message == {"n": start + n}
    assert out.damaged == [lines[n] for n in sorted(broken)]


@given(st.integers(0, 50), st.integers(0, 50))
def test_a_record_out_of_sequence_is_set_aside_not_renumbered(start, index) -> None:  # type: ignore[no-untyped-def]
    out = replay([_line(index)], start)
    if index == start:
        assert out.messages == [{"n": index}] and out.damaged == []
    else:  # nothing explains the jump (or the step back): keep the line aside, hold the number
        assert out.damaged == [_line(index)] and len(out.messages) == 1
        assert out.messages[0]["metadata"] == {DAMAGED_KEY: True}


@given(st.integers(0, 10**6), st.text(max_size=20))
def test_journal_record_round_trip(index, stamp) -> None:  # type: ignore[no-untyped-def]
    record = parse_journal_record(journal_record(index, stamp, '{"role":"user","content":"x"}'))
    assert (record.index, record.timestamp, record.message["content"]) == (index, stamp, "x")


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_item4_a_compaction_the_disk_refuses_leaves_the_session_as_it_was(tmp_path: Path) -> None:
    """Found by the torture run: a compaction whose checkpoint failed (disk full) left the
    compacted copy in memory, so the next append wrote a record out of sequence, and that
    acknowledged message was set aside as damaged at the next load."""
    import resource

    store = make_store(tmp_path, limits=Limits(session_compact_trigger=10**6))
    sid = store.create().id
    for n in range(40):
        store.append(sid, user(f"{n:03d} " + "x" * 1000))
    store.flush()  # the checkpoint holds 40 kB; the journal starts empty
    for n in range(40, 45):
        store.append(sid, user(f"{n:03d} " + "x" * 1000))
    size = (store.directory / f"{sid}.json").stat().st_size
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))  # 40 kept + a summary: no fit
    try:
        with pytest.raises(OSError):
            store.compact(sid, keep_last=40)
        store.append(sid, user("045 after the failed compaction"))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    reloaded = make_store(tmp_path).get(sid)
    assert [m["content"][:3] for m in reloaded.messages] == [f"{n:03d}" for n in range(46)]
    assert not list(store.directory.glob("*.corrupt-*"))
    store.close()
