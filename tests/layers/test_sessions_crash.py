"""Crash and multi-process tests: returned appends survive SIGKILL; writers never interleave."""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest

from markus_memory.config import Limits

from .sessions_support import make_store, user

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="needs fork and SIGKILL"),
]

SID = "channel_group:crash_agt_1"  # a Windows-unsafe id, so the encoded file names are used
NO_AUTO_COMPACT = Limits(session_compact_trigger=10**9)


def _append_forever(root: Path, round_no: int, out: int) -> None:
    """Child body: append and report every index that append() returned."""
    try:
        # Small checkpoints so that kills also land inside checkpoint + journal removal.
        store = make_store(root, limits=NO_AUTO_COMPACT, checkpoint_min_bytes=3000)
        i = 0
        while True:
            store.append(SID, user(f"r{round_no}-{i}"))
            os.write(out, f"{i}\n".encode())
            i += 1
    finally:
        os._exit(0)


def test_every_reported_append_survives_sigkill(tmp_path: Path) -> None:
    rng = random.Random(20240610)
    make_store(tmp_path).get_or_create(SID)
    reported: dict[int, int] = {}
    for round_no in range(60):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _append_forever(tmp_path, round_no, write_end)
        os.close(write_end)
        # Wait for the first reported append, so a loaded machine still kills a busy writer.
        first = _first_line(read_end)
        time.sleep(rng.uniform(0.002, 0.04))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(read_end, "rb") as pipe:
            lines = (first + pipe.read()).split(b"\n")
        complete = [int(x) for x in lines[:-1]]
        assert complete == list(range(len(complete)))
        reported[round_no] = len(complete)

        # The session loads (replaying and cutting a torn line) and holds every reported append.
        contents = [m["content"] for m in make_store(tmp_path).get(SID).messages]
        ours = [c for c in contents if c.startswith(f"r{round_no}-")]
        assert ours[: reported[round_no]] == [f"r{round_no}-{i}" for i in range(len(complete))]
        # At most one more (appended, killed before it was reported), never a gap or a duplicate.
        assert len(ours) - reported[round_no] in (0, 1)
        assert ours == [f"r{round_no}-{i}" for i in range(len(ours))]

    contents = [m["content"] for m in make_store(tmp_path).get(SID).messages]
    rounds = [int(c.split("-")[0][1:]) for c in contents]
    assert rounds == sorted(rounds)
    assert sum(reported.values()) > 60  # the children did real work before they died
    leftovers = [p.name for p in (tmp_path / "agt_0123456789abcdef01234567" / "sessions").iterdir()]
    assert all(not name.endswith(".tmp") or name.startswith(".") for name in leftovers)


def _first_line(fd: int) -> bytes:
    """Bytes read from ``fd`` up to and including the first newline (or end of file)."""
    got = b""
    while not got.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        got += byte
    return got


def _append_n(root: Path, tag: str, n: int, close: bool = True) -> None:
    try:
        store = make_store(root, limits=NO_AUTO_COMPACT, checkpoint_min_bytes=2000)
        for i in range(n):
            store.append(SID, user(f"{tag}-{i}"))
        if close:
            store.close()
    finally:
        os._exit(0)


def test_two_processes_appending_to_one_session_never_interleave(tmp_path: Path) -> None:
    make_store(tmp_path).get_or_create(SID)
    pids = []
    for tag in ("a", "b"):
        pid = os.fork()
        if pid == 0:
            _append_n(tmp_path, tag, 300)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert status == 0
    contents = [m["content"] for m in make_store(tmp_path).get(SID).messages]
    assert len(contents) == 600
    for tag in ("a", "b"):
        assert [c for c in contents if c.startswith(tag)] == [f"{tag}-{i}" for i in range(300)]


@pytest.mark.parametrize("writer_closes", [False, True])
def test_another_process_sees_appends_as_soon_as_they_return(
    tmp_path: Path, writer_closes: bool
) -> None:
    reader = make_store(tmp_path)
    reader.get_or_create(SID)
    assert reader.get(SID).messages == ()
    pid = os.fork()
    if pid == 0:
        _append_n(tmp_path, "w", 5, close=writer_closes)
    os.waitpid(pid, 0)
    # Without close the writer's appends are only in the journal; with it, in a new checkpoint.
    journal = (
        tmp_path / "agt_0123456789abcdef01234567" / "sessions" / "channel_group%3Acrash_agt_1.jsonl"
    )
    assert journal.exists() is not writer_closes
    # The reader's cached copy is revalidated against the journal/checkpoint on each call.
    assert [m["content"] for m in reader.recent(SID, 10)] == [f"w-{i}" for i in range(5)]
    reader.append(SID, user("reader"))
    assert len(make_store(tmp_path).get(SID).messages) == 6
    reader.close()
