"""knowledge.md under several processes and under SIGKILL: nothing lost, nothing torn."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest

from markus_memory._fs import atomic_write_text, read_text
from markus_memory._lock import AgentLock
from markus_memory.config import utc_now
from markus_memory.layers.knowledge import parse_knowledge, render_knowledge

from .knowledge_support import make_knowledge

pytestmark = pytest.mark.slow


def _save_many(root: str, worker: int, count: int, results: multiprocessing.Queue) -> None:
    kf = make_knowledge(Path(root), utc_now)
    ids = [
        kf.save_observation(f"worker {worker} save {i}", "fact", [f"w{worker}"]).id
        for i in range(count)
    ]
    results.put(ids)


def test_four_processes_saving_at_once_lose_nothing(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=_save_many, args=(str(tmp_path), worker, 100, results))
        for worker in range(4)
    ]
    for proc in procs:
        proc.start()
    returned = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    saved = {obs.id for obs in make_knowledge(tmp_path).observations()}
    assert len(saved) == 400
    assert saved == {obs_id for ids in returned for obs_id in ids}


def _curated_writer(root: str, rounds: int) -> None:
    kf = make_knowledge(Path(root), utc_now)
    for i in range(rounds):
        assert kf.update_section("agent", f"agent value {i}").ok


def _hand_editor(root: str, rounds: int) -> None:
    """A tool editing the file as text (like the agent's file_edit hook), holding the lock."""
    path = Path(root) / "knowledge.md"
    lock = AgentLock(Path(root) / ".lock", timeout=30)
    for i in range(rounds):
        with lock:
            text = read_text(path) or "# Knowledge\n"
            body = f"## human\nhand value {i}\n"
            if "## human\n" in text:
                start = text.index("## human\n")
                end = text.index("\n", start + len("## human\n")) + 1
                text = text[:start] + body + text[end:]
            else:
                text = text.rstrip("\n") + "\n\n" + body
            atomic_write_text(path, text)
        time.sleep(random.uniform(0, 0.003))


def test_curated_write_racing_a_hand_edit_of_another_section_loses_neither(
    tmp_path: Path,
) -> None:
    make_knowledge(tmp_path).save_observation("keep me")
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_curated_writer, args=(str(tmp_path), 60)),
        ctx.Process(target=_hand_editor, args=(str(tmp_path), 60)),
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    kf = make_knowledge(tmp_path)
    assert kf.section("agent") == "agent value 59"
    assert kf.section("human") == "hand value 59"
    assert [o.content for o in kf.observations()] == ["keep me"]


def _crash_writer(root: str, fd: int) -> None:
    kf = make_knowledge(Path(root), utc_now, max_observations=1_000_000)
    i = 0
    while True:
        obs = kf.save_observation(f"crash save {i}\n### looks like a heading", "note", ["crash"])
        os.write(fd, (obs.id + "\n").encode())  # < PIPE_BUF: atomic
        if i % 7 == 3:
            kf.update_section("progress", f"round {i}")
        i += 1


def _drain(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk.decode())
    return "".join(chunks)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")
def test_sigkill_at_random_moments_never_tears_the_file_or_loses_a_returned_save(
    tmp_path: Path,
) -> None:
    ctx = multiprocessing.get_context("fork")
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    path = tmp_path / "knowledge.md"
    returned: set[str] = set()
    rng = random.Random(1234)
    kills = 0
    try:
        while kills < 55:
            proc = ctx.Process(target=_crash_writer, args=(str(tmp_path), write_end))
            proc.start()
            time.sleep(rng.uniform(0.005, 0.15))
            os.kill(proc.pid, signal.SIGKILL)
            proc.join()
            kills += 1
            returned.update(line for line in _drain(read_end).split("\n") if line)
            text = read_text(path)
            if text is None:
                assert not returned
                continue
            doc = parse_knowledge(text)
            assert render_knowledge(doc) == text, "torn or foreign content in knowledge.md"
            assert returned <= {o.id for o in doc.observations}
    finally:
        os.close(read_end)
        os.close(write_end)
    assert kills >= 50 and len(returned) >= 10
