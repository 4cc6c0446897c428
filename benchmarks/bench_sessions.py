"""Median cost of one session append: SessionStore vs the original's whole-file rewrite.

Run: ``.venv/bin/python benchmarks/bench_sessions.py``. Prints plain medians (ms) for appends to
a 10-message and a 2,000-message session, their ratio, and the same for the baseline: the
original Markus save (``JSON.stringify(session, null, 2)`` written over the file
on every save), run in the same process on the same messages. Automatic compaction is
disabled so the 2,000-message session stays that long.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits, utc_now
from markus_memory.layers.sessions import SessionStore

sys.path.insert(0, str(Path(__file__).parent))

from _common import median_ms_per_round  # noqa: E402

ROUNDS = 400


def message(i: int) -> dict[str, object]:
    """A plausible mix: short user turns, medium answers, a 2 kB tool result every 5th."""
    if i % 5 == 4:
        return {"role": "tool", "content": "output line\n" * 170, "toolCallId": f"c{i}"}
    if i % 2:
        return {"role": "assistant", "content": f"Here is what I found about item {i}. " * 8}
    return {"role": "user", "content": f"Please look at item {i} — and the 日本 notes."}


def bench_store(root: Path, length: int, *, fsync: bool = False) -> float:
    paths = AgentPaths(root / f"agt_{length}_{fsync}")
    limits = Limits(session_compact_trigger=10**9)
    store = SessionStore(paths, AgentLock(paths.lock), limits, utc_now, fsync=fsync)
    sid = store.create().id
    for i in range(length):
        store.append(sid, message(i))
    store.flush()
    rounds = ROUNDS if not fsync else 100
    result = median_ms_per_round(lambda i: store.append(sid, message(length + i)), rounds)
    store.close()
    return result


def bench_original(root: Path, length: int) -> float:
    """The original: every save rewrites the whole pretty-printed file in place."""
    path = root / f"original_{length}.json"
    session = {
        "id": "sess_1718000000000_k3j9qz",
        "agentId": "agt_0123456789abcdef01234567",
        "messages": [message(i) for i in range(length)],
        "startedAt": "2024-06-10T06:13:20.000Z",
        "lastActivityAt": "2024-06-10T06:13:20.000Z",
    }
    messages: list[dict[str, object]] = session["messages"]  # type: ignore[assignment]

    def append(i: int) -> None:
        messages.append(message(length + i))
        path.write_text(json.dumps(session, indent=2, ensure_ascii=False), encoding="utf-8")

    return median_ms_per_round(append, 100)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ours = {n: bench_store(root, n) for n in (10, 2000)}
        theirs = {n: bench_original(root, n) for n in (10, 2000)}
        synced = bench_store(root, 10, fsync=True)
    print("median append cost (ms), durable on return (survives SIGKILL)")
    print(
        f"  SessionStore      10 msgs: {ours[10]:.4f}   2000 msgs: {ours[2000]:.4f}"
        f"   ratio 2000/10: {ours[2000] / ours[10]:.2f}"
    )
    print(
        f"  original rewrite  10 msgs: {theirs[10]:.4f}   2000 msgs: {theirs[2000]:.4f}"
        f"   ratio 2000/10: {theirs[2000] / theirs[10]:.2f}"
    )
    print(f"  speed-up at 2000 msgs: {theirs[2000] / ours[2000]:.0f}x")
    print(f"  SessionStore with fsync=True (survives power loss), 10 msgs: {synced:.4f}")


if __name__ == "__main__":
    main()
