from __future__ import annotations

import multiprocessing
import multiprocessing.queues
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from markus_memory._fs import (
    STALE_TEMP_SECONDS,
    atomic_write_text,
    read_text,
    signature,
    validate_id,
    validate_key,
)
from markus_memory._lock import MAX_IDLE_LOCK_FDS, AgentLock
from markus_memory.errors import CorruptFileError, InvalidIdError, LockTimeoutError


@pytest.mark.parametrize(
    "bad",
    ["", " ", "a/b", "a\\b", "..", ".", ".hidden", "a\x00b", "a\nb", "x" * 129, " a", 5, None],
)
def test_validate_id_rejects_unsafe_ids(bad: object) -> None:
    with pytest.raises(InvalidIdError):
        validate_id("agent id", bad)


@pytest.mark.parametrize("good", ["alice", "agt_0123456789abcdef01234567", "a.b-c_d", "渡辺"])
def test_validate_id_accepts_ordinary_ids(good: str) -> None:
    assert validate_id("agent id", good) == good


def test_validate_key_allows_slashes_but_not_newlines() -> None:
    assert validate_key("section", "deploy/tips") == "deploy/tips"
    with pytest.raises(InvalidIdError):
        validate_key("section", "a\nb")
    with pytest.raises(InvalidIdError):
        validate_key("section", "x" * 201)


def test_atomic_write_is_exact_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.md"
    text = "a\r\nb\n\tc ✓ 漢字 😀\n"
    atomic_write_text(target, text)
    assert read_text(target) == text
    assert target.read_bytes() == text.encode()
    assert [p.name for p in target.parent.iterdir()] == ["f.md"]


def test_read_text_missing_is_none_and_invalid_utf8_is_reported(tmp_path: Path) -> None:
    assert read_text(tmp_path / "nope") is None
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"ok \xff\xfe broken")
    with pytest.raises(CorruptFileError, match="UTF-8"):
        read_text(bad)
    assert bad.read_bytes() == b"ok \xff\xfe broken"


def test_signature_changes_on_replace(tmp_path: Path) -> None:
    path = tmp_path / "f"
    assert signature(path) is None
    atomic_write_text(path, "one")
    first = signature(path)
    atomic_write_text(path, "two")
    assert signature(path) != first


def test_lock_is_reentrant_across_handles_in_one_thread(tmp_path: Path) -> None:
    a = AgentLock(tmp_path / ".lock", timeout=1)
    b = AgentLock(tmp_path / ".lock", timeout=1)
    with a, b, a:
        pass


def test_lock_excludes_other_threads(tmp_path: Path) -> None:
    lock = AgentLock(tmp_path / ".lock", timeout=5)
    counter = {"n": 0}

    def bump() -> None:
        for _ in range(200):
            with lock:
                value = counter["n"]
                counter["n"] = value + 1

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter["n"] == 800


def _hold_lock(
    path: str, ready: multiprocessing.synchronize.Event, done: multiprocessing.synchronize.Event
) -> None:
    with AgentLock(Path(path), timeout=5):
        ready.set()
        done.wait(10)


def test_lock_excludes_other_processes_and_times_out(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold_lock, args=(str(tmp_path / ".lock"), ready, done))
    proc.start()
    try:
        assert ready.wait(20)
        with pytest.raises(LockTimeoutError):
            AgentLock(tmp_path / ".lock", timeout=0.2).acquire()
    finally:
        done.set()
        proc.join(20)
    with AgentLock(tmp_path / ".lock", timeout=5):
        assert os.path.exists(tmp_path / ".lock")


def test_atomic_write_sweeps_stale_temp_files_of_that_path_only(tmp_path: Path) -> None:
    target = tmp_path / "f.md"
    old = time.time() - STALE_TEMP_SECONDS - 60
    stale = tmp_path / ".f.md.0badc0de.tmp"  # what a writer killed mid-write leaves
    fresh = tmp_path / ".f.md.12345678.tmp"  # could belong to a live writer
    other = tmp_path / ".g.md.0badc0de.tmp"  # another file's temp
    not_ours = tmp_path / ".f.md.backup.tmp"  # not a name atomic_write_bytes makes
    for leftover in (stale, fresh, other, not_ours):
        leftover.write_bytes(b"torn")
    for leftover in (stale, other, not_ours):
        os.utime(leftover, (old, old))
    atomic_write_text(target, "new")
    assert read_text(target) == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["f.md", fresh.name, other.name, not_ours.name]
    )


def _kill_mid_write(path: str) -> None:
    target = Path(path)
    real_fsync = os.fsync

    def die_before_replace(fd: int) -> None:
        real_fsync(fd)
        os.kill(os.getpid(), signal.SIGKILL)

    os.fsync = die_before_replace  # the child dies after its temp file is on disk
    atomic_write_text(target, "torn")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_temp_file_of_a_killed_writer_is_swept_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "f.md"
    atomic_write_text(target, "old")
    proc = multiprocessing.get_context("spawn").Process(target=_kill_mid_write, args=(str(target),))
    proc.start()
    proc.join(20)
    assert proc.exitcode == -signal.SIGKILL
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1
    assert read_text(target) == "old"
    atomic_write_text(target, "next")  # younger than STALE_TEMP_SECONDS: may be a live writer's
    assert leftovers[0].exists()
    old = time.time() - STALE_TEMP_SECONDS - 1
    os.utime(leftovers[0], (old, old))
    atomic_write_text(target, "later")
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]
    assert read_text(target) == "later"


def _try_lock_when_told(
    path: str, go: multiprocessing.synchronize.Event, result: multiprocessing.queues.Queue[str]
) -> None:
    go.wait(20)
    try:
        with AgentLock(Path(path), timeout=0.3):
            result.put("acquired")
    except LockTimeoutError:
        result.put("timed out")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_lock_kept_open_between_acquisitions_still_excludes_a_forked_child(
    tmp_path: Path,
) -> None:
    lock = AgentLock(tmp_path / ".lock", timeout=5)
    with lock:  # the lock file stays open in this process after this block
        pass
    ctx = multiprocessing.get_context("fork")
    result: multiprocessing.queues.Queue[str] = ctx.Queue()
    go = ctx.Event()
    # The child inherits the open lock file, and flock belongs to the shared open file
    # description: it must lock through a file it opens itself.
    child = ctx.Process(target=_try_lock_when_told, args=(str(tmp_path / ".lock"), go, result))
    child.start()
    try:
        with lock:
            go.set()
            assert result.get(timeout=20) == "timed out"
    finally:
        go.set()
        child.join(20)
    go.clear()
    child = ctx.Process(target=_try_lock_when_told, args=(str(tmp_path / ".lock"), go, result))
    child.start()
    go.set()
    assert result.get(timeout=20) == "acquired"
    child.join(20)


@pytest.mark.slow
def test_lock_follows_a_lock_file_replaced_while_it_was_kept_open(tmp_path: Path) -> None:
    lock = AgentLock(tmp_path / ".lock", timeout=0.2)
    with lock:
        pass
    (tmp_path / ".lock").unlink()  # e.g. the agent directory was removed and made again
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold_lock, args=(str(tmp_path / ".lock"), ready, done))
    proc.start()
    try:
        assert ready.wait(20)
        with pytest.raises(LockTimeoutError):
            lock.acquire()
    finally:
        done.set()
        proc.join(20)
    with lock:
        assert (tmp_path / ".lock").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count open files")
def test_idle_lock_files_kept_open_are_bounded(tmp_path: Path) -> None:
    for i in range(MAX_IDLE_LOCK_FDS + 20):
        with AgentLock(tmp_path / f"agent{i}" / ".lock", timeout=1):
            pass
    open_locks = [
        target
        for fd in os.listdir("/proc/self/fd")
        if (target := _fd_target(fd)).startswith(str(tmp_path))
    ]
    assert 0 < len(open_locks) <= MAX_IDLE_LOCK_FDS


def _fd_target(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""
