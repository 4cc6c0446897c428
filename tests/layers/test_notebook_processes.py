"""Several processes on one NOTEBOOK.md: hand edits racing upserts, and writers killed mid-write."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory.layers.notebook import parse_notebook, render_notebook

pytestmark = pytest.mark.slow

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

PRELUDE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from markus_memory._fs import atomic_write_text, read_text
    from markus_memory._lock import AgentLock
    from markus_memory.config import AgentPaths, Limits, utc_now
    from markus_memory.layers.notebook import Notebook
    root = Path(sys.argv[1])
    paths = AgentPaths(root)
    lock = AgentLock(paths.lock, timeout=30)
    nb = Notebook(paths, lock, Limits(), utc_now)
    go = root / "go"
    """
)

UPSERTER = PRELUDE + textwrap.dedent(
    """
    import time
    start, count = int(sys.argv[2]), int(sys.argv[3])
    print("ready", flush=True)
    while len(sys.argv) > 4 and not go.exists():
        time.sleep(0.001)
    for i in range(start, start + count):
        nb.upsert(f"k{i % 4}", f"value {i}\\n## looks like a heading {i}")
        print(i, flush=True)
        if len(sys.argv) > 4:
            time.sleep(0.002)  # flock is not fair: leave the other process a gap
    """
)

HAND_EDITOR = PRELUDE + textwrap.dedent(
    """
    import re
    import time
    count = int(sys.argv[2])
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    seen = set()
    for j in range(count):
        with lock:  # an editor integration takes the agent lock like every writer
            text = read_text(paths.notebook)
            text = re.sub(r"(## hand\\n(?:<!--.*-->\\n)*)hand \\d+", rf"\\g<1>hand {j}", text)
            atomic_write_text(paths.notebook, text)
            seen.add(tuple(re.findall(r"value \\d+", text)))
        time.sleep(0.002)
    print(len(seen), flush=True)
    """
)


def _run(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _values(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    doc = parse_notebook(text, T0)
    assert render_notebook(doc) == text, "the file is not in the layout the writer produces"
    return {entry.key: entry.text for entry in doc.entries}


def test_upserts_racing_hand_edits_of_another_entry_lose_neither(tmp_path: Path) -> None:
    root = tmp_path / "agt_race"
    root.mkdir()
    seed = "# Notebook\n\n## hand\n<!-- updated: 2026-01-01T00:00:00.000Z -->\n"
    (root / "NOTEBOOK.md").write_text(seed + "<!-- managed: system -->\nhand 0\n", "utf-8")
    max_rounds, count = 8, 60
    interleaved = 0
    for round_ in range(max_rounds):  # at least 3 rounds, more until the writers overlapped
        (root / "go").unlink(missing_ok=True)
        writer = _run(UPSERTER, root, round_ * count, count, "barrier")
        editor = _run(HAND_EDITOR, root, count)
        for process in (writer, editor):  # both imported and waiting: start them together
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        (root / "go").touch()
        seen, _ = editor.communicate(timeout=120)
        assert editor.returncode == 0
        interleaved += int(seen) > 1
        out, _ = writer.communicate(timeout=120)
        assert writer.returncode == 0
        values = _values(root / "NOTEBOOK.md")
        assert values["hand"] == f"hand {count - 1}"
        last = (round_ + 1) * count - 1
        for i in range(last - 3, last + 1):
            assert values[f"k{i % 4}"] == f"value {i}\n## looks like a heading {i}"
        assert len(values) == 5
        if round_ >= 2 and interleaved:
            break
    assert interleaved, "the two writers never overlapped; the race was not exercised"


def test_writers_killed_at_random_moments_never_tear_the_file_or_lose_an_upsert(
    tmp_path: Path,
) -> None:
    root = tmp_path / "agt_crash"
    root.mkdir()
    rng = random.Random(20261130)
    acked: dict[str, int] = {}
    started = 0
    kills = 0
    while kills < 50:
        child = _run(UPSERTER, root, started, 100_000)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        os.kill(child.pid, 0)
        threshold = rng.uniform(0, 0.04)
        try:
            child.wait(timeout=threshold)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
        child.wait()
        kills += child.returncode == -signal.SIGKILL
        numbers = [int(line) for line in child.stdout.read().split()]
        child.stdout.close()
        for i in numbers:
            acked[f"k{i % 4}"] = i
        values = _values(root / "NOTEBOOK.md") if (root / "NOTEBOOK.md").exists() else {}
        for key, i in acked.items():
            stored = int(re.match(r"value (\d+)", values[key]).group(1))  # type: ignore[union-attr]
            assert stored >= i, f"{key}: acknowledged value {i} lost (file has {stored})"
        assert len(values) <= 4
        started += max(numbers, default=started) - started + 10_000
