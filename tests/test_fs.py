from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from markus_memory._fs import (
    AgentLock,
    atomic_write_text,
    read_text,
    signature,
    validate_id,
    validate_key,
)
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
