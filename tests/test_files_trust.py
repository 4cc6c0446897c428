"""Issue #12 items 13–17: agent files are never opened through links, agent ids are safe names,
session messages are capped, a read-only home can be read, killed writers' temp files are swept.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory._fs import STALE_TEMP_SECONDS
from markus_memory.config import Limits, Settings
from markus_memory.errors import InvalidIdError, InvalidInputError, SymlinkError
from markus_memory.memory import AgentMemory
from tests.clocks import FakeClock

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and fork")


def _settings(home: Path, **kw: object) -> Settings:
    clock = FakeClock(datetime(2024, 3, 1, 12, tzinfo=timezone.utc))
    return Settings(home=home, clock=clock, **kw)  # type: ignore[arg-type]


def _agent(tmp_path: Path, **kw: object) -> AgentMemory:
    return open_agent("alice", settings=_settings(tmp_path / "home", **kw))


# -- item 13: links planted in an agent directory ---------------------------------------------


@posix_only
def test_item13_linked_knowledge_file_is_refused_not_read_or_written(tmp_path: Path) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("# Knowledge\n\n## Secrets\n\nthe launch code is 0000\n")
    with _agent(tmp_path) as mem:
        (mem.directory / "knowledge.md").unlink(missing_ok=True)
        (mem.directory / "knowledge.md").symlink_to(secret)
        with pytest.raises(SymlinkError, match="symbolic link"):
            mem.knowledge.read()
        with pytest.raises(SymlinkError):
            mem.knowledge.save_observation("written through the link?")
        assert (mem.directory / "knowledge.md").is_symlink()  # refused, not replaced
    assert "written through" not in secret.read_text()


@posix_only
def test_item13_linked_daily_log_and_session_files_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched\n")
    with _agent(tmp_path) as mem:
        log_path = mem.daily_log.path_for()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.symlink_to(outside)
        with pytest.raises(SymlinkError):
            mem.daily_log.write("appended outside the home?")
        sid = mem.sessions.create().id
        journal = mem.sessions.directory / f"{sid}.jsonl"
        journal.symlink_to(outside)
        with pytest.raises(SymlinkError):
            mem.sessions.append(sid, {"role": "user", "content": "into the link?"})
        linked = mem.sessions.directory / "sess_1_linked.json"
        linked.symlink_to(outside)
        with pytest.raises(SymlinkError):
            mem.sessions.get("sess_1_linked")
    assert outside.read_text() == "untouched\n"


@posix_only
@pytest.mark.parametrize("folder", ["sessions", "daily-logs"])
def test_item13_linked_agent_folder_is_refused_not_written_through(
    tmp_path: Path, folder: str
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with _agent(tmp_path) as mem:
        directory = mem.sessions.directory if folder == "sessions" else mem.daily_log.directory
        assert directory.name == folder
        if directory.exists():
            directory.rmdir()
        directory.symlink_to(outside, target_is_directory=True)
        with pytest.raises(SymlinkError, match="symbolic link.*real directory"):
            if folder == "sessions":
                mem.sessions.append("sess_1_abc", {"role": "user", "content": "through?"})
            else:
                mem.daily_log.write("through the linked folder?")
        with pytest.raises(SymlinkError):
            if folder == "sessions":
                mem.sessions.list()
            else:
                mem.daily_log.read()
        assert directory.is_symlink()
    assert list(outside.iterdir()) == []


@posix_only
def test_item13_linked_lock_file_is_refused_and_nothing_is_created_outside(tmp_path: Path) -> None:
    home = tmp_path / "home"
    agent_dir = home / "agents" / "alice"
    agent_dir.mkdir(parents=True)
    target = tmp_path / "elsewhere" / "created.lock"
    target.parent.mkdir()
    (agent_dir / ".lock").symlink_to(target)
    with pytest.raises(SymlinkError, match=r"\.lock: is a symbolic link"):
        open_agent("alice", settings=_settings(home)).notebook.upsert("k", "v")
    assert not target.exists()


# -- item 14: agent ids ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("😀" * 64, "bytes in UTF-8"),  # 64 characters, 256 bytes: a raw 'File name too long'
        ("ali\u200bce", "invisible"),  # zero-width space
        ("\u202eecila", "direction"),  # right-to-left override
        ("ali\u00a0ce", "invisible"),  # no-break space looks like a space
        ("alice\ufeff", "invisible"),  # byte order mark
    ],
)
def test_item14_agent_ids_are_checked_in_bytes_and_for_invisible_characters(
    tmp_path: Path, bad: str, why: str
) -> None:
    with pytest.raises(InvalidIdError, match=why):
        open_agent(bad, settings=_settings(tmp_path))
    assert not (tmp_path / "agents").exists() or not any((tmp_path / "agents").iterdir())


def test_item14_look_alike_agent_ids_are_one_agent(tmp_path: Path) -> None:
    composed, decomposed = "Ren\u00e9", "Rene\u0301"
    with open_agent(decomposed, settings=_settings(tmp_path)) as mem:
        assert mem.agent_id == composed
        mem.notebook.upsert("k", "one agent")
    with open_agent(composed, settings=_settings(tmp_path)) as mem:
        assert mem.notebook.get("k").text == "one agent"
    assert [p.name for p in (tmp_path / "agents").iterdir()] == [composed]


def test_item14_session_ids_must_fit_a_file_name(tmp_path: Path) -> None:
    with _agent(tmp_path) as mem:
        with pytest.raises(InvalidIdError, match="file name would be"):
            mem.sessions.get_or_create(":" * 100)  # 100 bytes, 300 once encoded
        assert mem.sessions.get_or_create("é" * 64).id == "é" * 64  # 128 bytes


# -- item 15: session message size cap -------------------------------------------------------


def test_item15_oversized_session_message_is_refused_and_nothing_stored(tmp_path: Path) -> None:
    limits = Limits(session_message_max_bytes=10_000)
    with _agent(tmp_path, limits=limits) as mem:
        sid = mem.sessions.create().id
        with pytest.raises(InvalidInputError, match=r"too large: 20,0\d\d bytes \(limit 10,000"):
            mem.sessions.append(sid, {"role": "tool", "content": "x" * 20_000})
        assert mem.sessions.append(sid, {"role": "user", "content": "small"}).seq == 0
        assert [m["content"] for m in mem.sessions.get(sid).messages] == ["small"]
    default = Limits().session_message_max_bytes
    with _agent(tmp_path) as mem, pytest.raises(InvalidInputError, match="too large"):
        mem.sessions.append(mem.sessions.create().id, {"role": "user", "content": "y" * default})


# -- item 16: a read-only home --------------------------------------------------------------


def _read_only(root: Path, check: Callable[[], object]) -> str:
    """Run ``check`` in a child process that may not write under ``root``; its error or ''.

    As root (which ignores file modes) the child gets a private mount namespace in which
    ``root`` is mounted read-only; otherwise the files lose their write permission."""
    modes = {} if os.geteuid() == 0 else {p: p.stat().st_mode for p in [root, *root.rglob("*")]}
    for path, mode in modes.items():
        path.chmod(mode & ~0o222)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        outcome = ""
        try:
            if not modes:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.unshare(0x00020000) != 0:
                    os.write(write_end, b"SKIP")
                    os._exit(0)
                for cmd in (["--make-rprivate", "/"], ["--bind", root, root]):
                    subprocess.run(["mount", *map(str, cmd)], check=True, capture_output=True)
                remount = ["mount", "-o", "remount,bind,ro", str(root)]
                subprocess.run(remount, check=True, capture_output=True)
            check()
        except BaseException:
            outcome = traceback.format_exc()
        os.write(write_end, outcome.encode()[-4000:])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        outcome = pipe.read().decode()
    os.waitpid(pid, 0)
    for path, mode in modes.items():
        path.chmod(mode)
    if outcome == "SKIP":
        pytest.skip("cannot make a read-only mount here")
    return outcome


@posix_only
def test_item16_read_only_home_can_be_read_and_closed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _agent(tmp_path) as mem:
        mem.knowledge.save_observation("the deploy runs on fridays")
        mem.notebook.upsert("k", "a note")
        sid = mem.sessions.create().id
        mem.sessions.append(sid, {"role": "user", "content": "the blue bicycle"})
    (home / "agents" / "alice" / ".lock").unlink()  # a home copied without its lock files

    def read() -> None:
        mem = _agent(tmp_path)
        assert mem.knowledge.observations()[0].content == "the deploy runs on fridays"
        assert mem.notebook.get("k").text == "a note"
        assert [s.id for s in mem.sessions.list()] == [sid]
        assert mem.sessions.get(sid).messages[0]["content"] == "the blue bicycle"
        assert mem.search("deploy").hits
        assert mem.recall_conversation("bicycle")[0].text == "the blue bicycle"
        mem.close()
        env = {**os.environ, "MARKUS_HOME": str(home)}
        cli = Path(sys.executable).with_name("markus-memory")
        for command in (["show"], ["search", "deploy"], ["sessions"], ["doctor"]):
            done = subprocess.run(
                [str(cli), *command, "-a", "alice"], env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, (command, done.stdout, done.stderr)

    assert _read_only(home, read) == ""


@posix_only
@pytest.mark.parametrize("store", ["behind", "missing"])
def test_item16_read_only_home_recalls_what_its_store_lacks(tmp_path: Path, store: str) -> None:
    """The session files hold turns data.db lacks (written by the original Markus system, or
    data.db removed): a home that may only be read still recalls them, from a private index
    of the files that disappears with the process."""
    home = tmp_path / "home"
    with _agent(tmp_path) as mem:
        sid = mem.sessions.create().id
        mem.sessions.append(sid, {"role": "user", "content": "the blue bicycle"})
    for path in home.glob("data.db*"):
        path.unlink()
    if store == "behind":  # another agent's use creates data.db without alice's turns
        with open_agent("bob", settings=_settings(home)) as other:
            other.sessions.append(other.sessions.create().id, {"role": "user", "content": "hi"})
            assert other.recall_conversation("hi")
    files = sorted(p.name for p in home.iterdir())
    scratch = tmp_path / "tmp"
    scratch.mkdir()

    def read() -> None:
        tempfile.tempdir = str(scratch)
        with _agent(tmp_path) as mem:
            assert [h.text for h in mem.recall_conversation("bicycle")] == ["the blue bicycle"]
            assert mem.recall_conversation("bicycle", session_id=sid)[0].session_id == sid
            assert len(list(scratch.iterdir())) == 1  # the private index
        assert not list(scratch.iterdir())  # deleted on close

    assert _read_only(home, read) == ""
    assert sorted(p.name for p in home.iterdir()) == files


# -- item 17: temp files of killed writers ----------------------------------------------------


def test_item17_temp_files_of_killed_writers_are_swept_on_open(tmp_path: Path) -> None:
    with _agent(tmp_path) as mem:
        sid = mem.sessions.create().id
        agent_dir, sessions = mem.directory, mem.sessions.directory
    old = time.time() - STALE_TEMP_SECONDS - 60
    stale = [
        agent_dir / ".knowledge.md.0a1b2c3d.tmp",
        agent_dir / ".NOTEBOOK.md.deadbeef.tmp",
        sessions / f".{sid}.json.12345678.tmp",
    ]
    for path in stale:
        path.write_text("half a write")
        os.utime(path, (old, old))
    fresh = agent_dir / ".state.md.87654321.tmp"  # a live writer's: too young to touch
    fresh.write_text("being written")
    kept = agent_dir / ".notes.tmp"  # not a name our writes use
    kept.write_text("someone else's")
    os.utime(kept, (old, old))
    with _agent(tmp_path):
        assert [p for p in stale if p.exists()] == []
        assert fresh.exists() and kept.exists()
    assert json.loads((sessions / f"{sid}.json").read_text())["id"] == sid


@posix_only
def test_item13_import_refuses_a_linked_file_instead_of_copying_its_target(
    tmp_path: Path,
) -> None:
    from markus_memory.transfer import import_agent

    secret = tmp_path / "secret.txt"
    secret.write_text("the launch code is 0000\n")
    source = _settings(tmp_path / "source")
    with open_agent("alice", settings=source) as mem:
        mem.notebook.upsert("k", "v")
        logs = mem.daily_log.path_for().parent
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "2024-03-01.md").symlink_to(secret)
    target = _settings(tmp_path / "target")
    with pytest.raises(SymlinkError):
        import_agent(source, target, "alice")
    copied = [p.read_text() for p in (tmp_path / "target").rglob("*.md") if p.is_file()]
    assert not any("launch code" in text for text in copied)
