"""Where a run's CPU went: the machine's busy share and the cores the hosts and PostgreSQL's
processes used (Linux ``/proc``; elsewhere nothing is measured).

A closed-loop load (workers that start the next call as the last returns) keeps a machine busy
whatever the number of hosts: when PostgreSQL and the hosts already use every core at H = 1,
more hosts can only share the same cores, and the figures say so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _machine() -> tuple[int, int] | None:
    """(busy, total) jiffies of every core since boot."""
    try:
        fields = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values) - idle, sum(values)


def _ticks(pid: int) -> int:
    """utime + stime of one process (0 once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return 0
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _postgres_pids() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text(encoding="ascii").strip() == "postgres":
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _used(start: dict[int, int], pids: Iterable[int]) -> int:
    """Ticks the processes used since ``start`` (a process gone since counts nothing)."""
    return sum(max(0, now - start.get(pid, 0)) for pid in pids if (now := _ticks(pid)))


class CpuMeter:
    """Started as a run starts and read as its hosts finish (before they exit)."""

    def __init__(self, hosts: Iterable[int]) -> None:
        self._start = time.monotonic()
        self._machine = _machine()
        self._hosts = {pid: _ticks(pid) for pid in hosts}
        self._postgres = {pid: _ticks(pid) for pid in _postgres_pids()}

    def read(self) -> dict[str, float] | None:
        """Cores used on average since the start: ``busy`` (the whole machine), ``hosts``,
        ``postgres``; and ``cores``, how many the machine has. None without ``/proc``."""
        machine = _machine()
        if machine is None or self._machine is None:
            return None
        seconds = time.monotonic() - self._start
        postgres = _used(self._postgres, _postgres_pids())
        host_ticks = _used(self._hosts, self._hosts)
        busy, total = (now - then for now, then in zip(machine, self._machine, strict=True))
        cores = os.cpu_count() or 1
        return {
            "cores": float(cores),
            "busy": cores * busy / total if total else 0.0,
            "hosts": host_ticks / TICKS / seconds,
            "postgres": postgres / TICKS / seconds,
        }
