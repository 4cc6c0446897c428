"""Cost of knowledge.md writes on a full store, against plain file writes in the same process.

Run: ``python benchmarks/bench_layers.py [--rounds N] [--dir PATH ...]``. By default it runs in
the system temp directory (a real disk: every write is fsynced) and, when present, in /dev/shm
(tmpfs: fsync is free, so what remains is the layer's own cost). It prints medians in ms.

The store is full: 500 observations (each save drops the oldest) and a curated part just under
its 15,000-char cap. Baselines on the same text: a naive write (``Path.write_text``: no lock, no
re-read, no fsync) and the durable atomic write alone (temp file, fsync, rename, fsync of the
directory), which every save must pay.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from markus_memory._fs import atomic_write_text
from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits, utc_now
from markus_memory.layers.knowledge import KnowledgeFile, Observation


def timed(action: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    action(*args)
    return time.perf_counter() - start


def full_store(root: Path) -> KnowledgeFile:
    kf = KnowledgeFile(AgentPaths(root), AgentLock(root / ".lock"), Limits(), utc_now)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    kf.add_observations(
        Observation(
            f"obs_{i}", "fact", f"observation {i}: " + "detail " * 12, start + timedelta(seconds=i)
        )
        for i in range(500)
    )
    for i in range(5):
        assert kf.update_section(f"section-{i}", f"line {i} " * 400).ok
    assert kf.update_section("target", "t" * 300).ok
    return kf


def run(directory: Path, rounds: int) -> None:
    """Interleave the four measurements round by round, so load on a shared machine hits all."""
    samples: dict[str, list[float]] = {"save": [], "update": [], "naive": [], "atomic": []}
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        root = Path(tmp)
        kf = full_store(root)
        curated = len(kf.curated_text())
        naive_path, atomic_path = root / "naive.md", root / "atomic.md"
        for i in range(rounds):
            samples["save"].append(timed(kf.save_observation, f"save {i} " + "x" * 80))
            body = ("u" if i % 2 else "v") * 300
            samples["update"].append(timed(kf.update_section, "target", body))
            text = kf.text()
            samples["naive"].append(timed(naive_path.write_text, text, "utf-8"))
            samples["atomic"].append(timed(atomic_write_text, atomic_path, text))
        assert len(kf.observations()) == 500 and len(kf.curated_text()) == curated
    save, update, naive, atomic = (statistics.median(v) * 1000 for v in samples.values())
    print(f"{directory}: 500 observations, curated part {curated} chars, file {len(text)} chars")
    print(f"  observation save           median {save:8.3f} ms")
    print(f"  curated section update     median {update:8.3f} ms")
    print(f"  baseline naive write       median {naive:8.3f} ms")
    print(f"  baseline atomic+fsync      median {atomic:8.3f} ms")
    print(f"  ratio save / naive         {save / naive:8.1f}x")
    print(f"  ratio update / naive       {update / naive:8.1f}x")
    print(f"  ratio save / atomic+fsync  {save / atomic:8.2f}x")
    print(f"  ratio update / atomic+fsync{update / atomic:8.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--dir", type=Path, action="append", dest="dirs")
    args = parser.parse_args(argv)
    dirs = args.dirs or [Path(tempfile.gettempdir())]
    if not args.dirs and Path("/dev/shm").is_dir():
        dirs.append(Path("/dev/shm"))
    for directory in dirs:
        run(directory, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
