"""One ``data.db`` under writer threads and readers that never pause: how large its write-ahead
log grows, how long reads and writes take, and whether a write is refused, with the log's
restart as built (every process's users step aside for it, a short checkpoint wait, a retry a
second later) against the restart before it (the checkpoint waiting the whole busy timeout for
readers, on every write past the bound), interleaved round by round.

Usage: python benchmarks/bench_wal.py [--writes 300] [--bound-kib 256] [--rounds 3]
                                     [--scans] [--foreign-reader] [--processes 1]

Each round: ``--writes`` transactions from each of 2 writer threads (an 8 kB row inserted and
one updated, as a recorded turn and its index are) while 2 reader threads run point reads of
random rows (``--scans``: each read sums every row instead, a long read). ``--foreign-reader``
also holds a read transaction open on a connection this process's SQLite layer does not know
of, as another process's long read would. ``--processes N`` runs that load in N processes at
once on the one file (the log's largest size and the slowest write over all of them, refused
writes summed, medians of their medians).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from markus_memory.errors import StorageError
from markus_memory.storage._sqlite import wal
from markus_memory.storage._sqlite.conn import BUSY_TIMEOUT_MS, SqliteDatabase


@contextlib.contextmanager
def before() -> Iterator[None]:
    """The restart as it was: no drain, the full busy timeout, a try on every write."""
    with (
        mock.patch.object(wal.WalKeeper, "enter", lambda self: None),
        mock.patch.object(wal.WalKeeper, "leave", lambda self: None),
        mock.patch.object(wal, "CHECKPOINT_BUSY_MS", BUSY_TIMEOUT_MS),
        mock.patch.object(wal, "RETRY_SECONDS", 0.0),
    ):
        yield


def made(foreign: bool) -> tuple[Path, sqlite3.Connection]:
    """A fresh file with 50 rows; and a connection of its own, holding a read open if
    ``foreign``."""
    path = Path(tempfile.mkdtemp()) / "data.db"
    db = SqliteDatabase(path)
    with db.write() as conn:
        conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, body BLOB)")
        conn.executemany("INSERT INTO t (body) VALUES (randomblob(8000))", [()] * 50)
    db.close()
    elsewhere = sqlite3.connect(path, isolation_level=None)
    if foreign:
        elsewhere.execute("BEGIN")
        elsewhere.execute("SELECT count(*) FROM t").fetchone()
    return path, elsewhere


def load(path: Path, writes: int, scans: bool) -> dict[str, float]:
    """This process's writers and readers on ``path``, and what they saw."""
    db = SqliteDatabase(path)
    stop = threading.Event()
    largest, refused = [0], [0]
    reads: list[float] = []
    writes_ms: list[float] = []

    def read() -> None:
        rng = random.Random(threading.get_ident())
        while not stop.is_set():
            started = time.perf_counter()
            with db.read() as conn:
                if scans:
                    conn.execute("SELECT count(*), sum(length(body)) FROM t").fetchone()
                else:
                    conn.execute("SELECT length(body) FROM t WHERE n = ?", (rng.randint(1, 50),))
            reads.append(time.perf_counter() - started)
            largest[0] = max(largest[0], os.path.getsize(f"{path}-wal"))

    def write(k: int) -> None:
        for _ in range(writes):
            started = time.perf_counter()
            try:
                with db.write() as conn:
                    conn.execute("INSERT INTO t (body) VALUES (randomblob(8000))")
                    conn.execute("UPDATE t SET body = randomblob(8000) WHERE n = ?", (k + 1,))
            except StorageError:
                refused[0] += 1
            writes_ms.append((time.perf_counter() - started) * 1000)

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(k,)) for k in range(2)]
    started = time.perf_counter()
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    elapsed = time.perf_counter() - started
    stop.set()
    for t in readers:
        t.join()
    db.close()
    writes_ms.sort()
    return {
        "wal_mb": largest[0] / 1e6,
        "read_us": statistics.median(reads) * 1e6,
        "write_ms": statistics.median(writes_ms),
        "write_p95_ms": writes_ms[int(len(writes_ms) * 0.95)],
        "refused": refused[0],
        "seconds": elapsed,
    }


def child(
    path: Path, writes: int, scans: bool, old: bool, bound: int, start: Any, out: Any
) -> None:
    wal.WAL_RESTART_BYTES = bound
    with before() if old else contextlib.nullcontext():
        start.wait()  # every process busy at once
        out.put(load(path, writes, scans))


def one_round(
    writes: int, scans: bool, foreign: bool, processes: int, old: bool
) -> dict[str, float]:
    path, elsewhere = made(foreign)
    try:
        if processes == 1:
            with before() if old else contextlib.nullcontext():
                return load(path, writes, scans)
        ctx = multiprocessing.get_context("spawn")
        start, out = ctx.Barrier(processes), ctx.Queue()
        args = (path, writes, scans, old, wal.WAL_RESTART_BYTES, start, out)
        procs = [ctx.Process(target=child, args=args) for _ in range(processes)]
        for proc in procs:
            proc.start()
        seen = [out.get() for _ in procs]
        for proc in procs:
            proc.join()
    finally:
        elsewhere.close()
    return {
        "wal_mb": max(r["wal_mb"] for r in seen),
        "read_us": statistics.median(r["read_us"] for r in seen),
        "write_ms": statistics.median(r["write_ms"] for r in seen),
        "write_p95_ms": max(r["write_p95_ms"] for r in seen),
        "refused": sum(r["refused"] for r in seen),
        "seconds": max(r["seconds"] for r in seen),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--bound-kib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scans", action="store_true")
    parser.add_argument("--foreign-reader", action="store_true")
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, float]]] = {"now": [], "before": []}
    with mock.patch.object(wal, "WAL_RESTART_BYTES", args.bound_kib * 1024):
        for _ in range(args.rounds):
            for name in runs:
                shape = (args.writes, args.scans, args.foreign_reader, args.processes)
                runs[name].append(one_round(*shape, old=name == "before"))
    keys = list(runs["now"][0])
    print(f"{'':8}" + "".join(f"{k:>14}" for k in keys))
    for name, rounds in runs.items():
        medians = [statistics.median(r[k] for r in rounds) for k in keys]
        print(f"{name:8}" + "".join(f"{m:14.3f}" for m in medians))
    print(f"medians of {args.rounds} rounds (refused: writes refused, database is locked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
