"""Notebook and state.md hot paths: median cost of a durable write and of a (cached) read.

Run: python benchmarks/bench_notebook_state.py   (prints medians in microseconds; the baseline
is a bare atomic_write_text of the same bytes, measured in the same process)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from markus_memory._fs import atomic_write_text
from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits, utc_now
from markus_memory.layers.notebook import Notebook
from markus_memory.layers.state import StateFile

sys.path.insert(0, str(Path(__file__).parent))

from _common import median_us_per_round  # noqa: E402

ROUNDS = 200


def paired_us(
    baseline: Callable[[int], object], action: Callable[[int], object], rounds: int = ROUNDS
) -> tuple[float, float]:
    """Medians of two actions run alternately, so that fsync latency drift hits both alike."""
    base, samples = [], []
    for i in range(rounds):
        for bucket, call in ((base, baseline), (samples, action)):
            start = time.perf_counter()
            call(i)
            bucket.append(time.perf_counter() - start)
    return statistics.median(base) * 1e6, statistics.median(samples) * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = AgentPaths(Path(tmp) / "agt_bench")
        paths.root.mkdir()
        lock = AgentLock(paths.lock)
        notebook = Notebook(paths, lock, Limits(), utc_now)
        state = StateFile(paths, lock, Limits(), utc_now)
        text = "x" * 1500 + "\n## heading-looking line\n" + "y" * 1500
        for key in ("a", "b", "c", "s"):
            notebook.upsert(key, text, managed="system" if key == "s" else "agent")
        raw = notebook.path.read_text(encoding="utf-8")
        plain = Path(tmp) / "plain.md"
        baseline, upsert = paired_us(
            lambda i: atomic_write_text(plain, raw), lambda i: notebook.upsert("a", f"{i} {text}")
        )
        cached = median_us_per_round(lambda i: notebook.entries(), ROUNDS)
        uncached = median_us_per_round(
            lambda i: Notebook(paths, lock, Limits(), utc_now).entries(), ROUNDS
        )
        for n in range(20):
            state.update(f"key-{n}", f"status {n}\n" * 20)
        state_text = state.text()
        state_base, state_update = paired_us(
            lambda i: atomic_write_text(plain, state_text),
            lambda i: state.update(f"key-{i % 20}", f"status {i}"),
        )
        snapshot = median_us_per_round(lambda i: state.snapshot(), ROUNDS)
    print(f"atomic_write_text baseline (~13 KB)  {baseline:9.1f} us")
    print(f"notebook.upsert (4 entries, 12 KB)   {upsert:9.1f} us  ({upsert / baseline:.2f}x)")
    print(f"notebook.entries cached              {cached:9.1f} us")
    print(f"notebook.entries cold parse          {uncached:9.1f} us")
    print(
        f"state.update (20 sections)           {state_update:9.1f} us  "
        f"({state_update / baseline:.2f}x)"
    )
    print(f"state.snapshot                       {snapshot:9.1f} us")


if __name__ == "__main__":
    main()
