"""Torture run: SIGKILL every writer at random moments, fill the disk, take write access away,
then check every write that was acknowledged.

    python -m benchmarks.torture --kills 1000
    python -m benchmarks.torture --kills 200 --backend postgres --url postgresql://postgres@127.0.0.1:5432/test
    python -m benchmarks.torture --dream --kills 300 [--backend postgres --url ...]

Writers (``_torture_ops``): observations, curated sections, notebook, state, session appends
and compactions, activities, dream cycles and imports. Most rounds kill one writer doing all of
them; some run three writers on one agent, some three agents on one ``data.db`` (or database),
all killed at the same moment. Then a few writers run with a file size limit
(``RLIMIT_FSIZE``) so that writes fail as on a full disk, and finally the home is made
read-only and read (as user ``nobody`` when run as root, since root ignores file modes).
POSIX only (fork, SIGKILL, setrlimit).

``--dream`` kills dreams and dream undos instead and checks that each left the documents
exactly before or exactly after the dream, with the history saying which
(``_torture_dream``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from urllib.parse import quote

from benchmarks._torture_dream import campaign as dream_campaign
from benchmarks._torture_ops import (
    ALL_OPS,
    Events,
    Home,
    Pipe,
    Tally,
    damaged_files,
    new_agent_id,
    seed_source,
    verify,
    writer,
)
from markus_memory import open_agent

FULL_DISK_OPS = ("obs", "section", "notebook", "state", "append", "append", "compact", "activity")
CLONE_NEWNS = 0x00020000


def _fork(body: Callable[[Pipe], None]) -> tuple[int, int]:
    """Run ``body`` in a child process; its pid and the read end of its event pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        code = 0
        try:
            body(Pipe(write_end))
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def _collect(fds: list[int], until: float | None) -> dict[int, bytes]:
    """Read the pipes until ``until`` (monotonic), or to their end when None."""
    got = {fd: b"" for fd in fds}
    open_fds = list(fds)
    while open_fds:
        left = None if until is None else until - time.monotonic()
        if left is not None and left <= 0:
            break
        ready, _, _ = select.select(open_fds, [], [], left)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                got[fd] += chunk
            else:
                open_fds.remove(fd)
    return got


class Campaign:
    def __init__(self, home: Home, rng: random.Random) -> None:
        self.home = home
        self.rng = rng
        self.events: dict[str, Events] = {}
        self.kills = 0
        self.concurrent_rounds = 0
        self.shared_db_rounds = 0
        self.disk_full_failures = 0
        self.child_errors = 0

    def _run(self, bodies: list[tuple[str, Callable[[Pipe], None]]], delay: float | None) -> None:
        started = [(agent, *_fork(body)) for agent, body in bodies]
        fds = [fd for _, _, fd in started]
        got = _collect(fds, None if delay is None else time.monotonic() + delay)
        for _, pid, _ in started:
            if delay is not None:
                os.kill(pid, signal.SIGKILL)
                self.kills += 1
        rest = _collect(fds, None)
        for agent, pid, fd in started:
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            if delay is None and os.waitstatus_to_exitcode(status) != 0:
                self.child_errors += 1
            self.events.setdefault(agent, Events()).feed(got[fd] + rest[fd])

    def _writer(self, agent: str, ops: tuple[str, ...], **kw: int) -> Callable[[Pipe], None]:
        seed = self.rng.getrandbits(32)
        return lambda pipe: writer(self.home, agent, seed, pipe, ops, **kw)

    def kill_rounds(self, kills: int, main: str, others: list[str]) -> None:
        """Rounds of one writer, three on ``main``, or one on each of three agents sharing the
        database, each killed after a random time, until ``kills`` processes were killed."""
        n = 0
        while self.kills < kills:
            n += 1
            delay = self.rng.uniform(0.05, 0.8)
            if n % 10 in (3, 8):
                self.concurrent_rounds += 1
                self._run([(main, self._writer(main, ALL_OPS)) for _ in range(3)], delay)
            elif n % 10 == 5:
                self.shared_db_rounds += 1
                self._run([(a, self._writer(a, ALL_OPS)) for a in [main, *others]], delay)
            else:
                self._run([(main, self._writer(main, ALL_OPS))], delay)

    def disk_full_rounds(self, agent: str, rounds: int) -> None:
        """Writers whose files may not grow past a little more than the agent's largest file
        now (``data.db`` too, when it is already larger: the disk is full for it as well)."""
        for _ in range(rounds):
            own = self.home.root / "agents" / agent
            sizes = [p.stat().st_size for p in own.rglob("*") if p.is_file()]
            limit = max(sizes, default=0) + self.rng.randint(100, 4_000)
            seed = self.rng.getrandbits(32)

            def body(pipe: Pipe, seed: int = seed, limit: int = limit) -> None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
                writer(self.home, agent, seed, pipe, FULL_DISK_OPS, max_ops=120)

            self._run([(agent, body)], None)
        self.disk_full_failures = len(self.events[agent].failed) if agent in self.events else 0


def _read_only_mount(root: Path) -> None:
    """In this (child) process only: a private mount namespace where ``root`` is read-only
    (root ignores file modes, so they would prove nothing)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    for command in (
        ["mount", "--make-rprivate", "/"],
        ["mount", "--bind", str(root), str(root)],
        ["mount", "-o", "remount,bind,ro", str(root)],
    ):
        subprocess.run(command, check=True)


def read_only_check(home: Home, agent: str) -> list[str]:
    """Take write access to the home away, then show, search, list sessions, recall, check and
    close as a reader; the failures (empty when all worked)."""
    as_root = os.geteuid() == 0
    modes = {} if as_root else {p: p.stat().st_mode for p in [home.root, *home.root.rglob("*")]}
    for path, mode in modes.items():
        path.chmod(mode & ~0o222)

    def body(pipe: Pipe) -> None:
        if as_root:
            _read_only_mount(home.root)
        failures = []
        steps: list[tuple[str, Callable[[], object]]] = []
        mem = open_agent(agent, settings=home.settings())
        steps += [
            ("knowledge", mem.knowledge.read),
            ("notebook", mem.notebook.entries),
            ("search", lambda: mem.search("observed")),
            ("sessions", lambda: [mem.sessions.get(i.id) for i in mem.sessions.list()]),
            ("recall", lambda: mem.recall_conversation("said")),
            ("close", mem.close),
        ]
        for command in (["show"], ["search", "observed"], ["sessions"], ["doctor"]):
            steps.append((f"cli {command[0]}", partial(_cli_ok, home, [*command, "-a", agent])))
        for name, step in steps:
            try:
                step()
            except BaseException as exc:
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
        pipe.say("ack", "read-only", "", "", failures)

    pid, fd = _fork(body)
    data = _collect([fd], None)[fd]
    os.close(fd)
    os.waitpid(pid, 0)
    for path, mode in modes.items():
        path.chmod(mode)
    events = Events()
    events.feed(data)
    return events.acked[0][3] if events.acked else ["the reader died"]


def _cli_ok(home: Home, argv: list[str]) -> None:
    env = {**os.environ, "MARKUS_HOME": str(home.root), "MARKUS_DATABASE_URL": home.url or ""}
    cli = Path(sys.executable).with_name("markus-memory")
    done = subprocess.run([str(cli), *argv], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: {done.stderr.strip()[-300:]}")


def _pg_schema(url: str) -> tuple[str, Callable[[], None]]:
    import psycopg

    schema = f"torture_{os.getpid()}_{random.getrandbits(24):06x}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")

    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-csearch_path={schema}')}", drop


def run_dreams(args: argparse.Namespace, home: Home, rng: random.Random) -> dict[str, object]:
    """The ``--dream`` campaign: kills inside dream() and dream undo, each checked."""
    start = time.monotonic()
    tally = dream_campaign(home, args.kills, rng, _fork, args.observations)
    inside = sum(n for where, n in tally.landed.items() if where.endswith("inside"))
    return {
        "backend": args.backend,
        "kills": tally.kills,
        "landed": dict(sorted(tally.landed.items())),
        "landed_inside_apply_or_undo": inside,
        "consistent": tally.consistent,
        "inconsistent": len(tally.inconsistent),
        "inconsistent_by_kind": dict(sorted(tally.kinds.items())),
        "seconds": round(time.monotonic() - start, 1),
        "details": tally.inconsistent[:20],
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="markus-torture-"))
    work.chmod(0o755)
    url, drop = (None, None)
    if args.backend == "postgres":
        url, drop = _pg_schema(args.url)
    try:
        home = Home(work / "home", url, work / "source")
        if args.dream:
            return run_dreams(args, home, rng)
        _run_once(lambda pipe: seed_source(home.source))
        main, others = new_agent_id("main"), [new_agent_id("peer"), new_agent_id("peer")]
        campaign = Campaign(home, rng)
        start = time.monotonic()
        campaign.kill_rounds(args.kills, main, others)
        full = new_agent_id("full")
        campaign.disk_full_rounds(full, args.disk_full_rounds)
        read_only = read_only_check(home, main)
        tally = Tally()
        for agent, events in campaign.events.items():
            tally.merge(verify(home, agent, events))
        tally.torn.extend(damaged_files(home))
        return {
            "backend": args.backend,
            "kills": campaign.kills,
            "concurrent_rounds": campaign.concurrent_rounds,
            "shared_database_rounds": campaign.shared_db_rounds,
            "acknowledged_writes_checked": tally.checked,
            "checked_by_kind": dict(sorted(tally.by_kind.items())),
            "lost": len(tally.lost),
            "torn": len(tally.torn),
            "duplicated": len(tally.duplicated),
            "disk_full_failed_writes": campaign.disk_full_failures,
            "failed_writes_found_stored": len(tally.ghosts),
            "read_only_failures": read_only,
            "writer_errors": campaign.child_errors,
            "seconds": round(time.monotonic() - start, 1),
            "details": (tally.lost + tally.torn + tally.duplicated + tally.ghosts)[:20],
        }
    finally:
        if drop is not None:
            drop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _run_once(body: Callable[[Pipe], None]) -> None:
    pid, fd = _fork(body)
    _collect([fd], None)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("seeding the import source failed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--url", default=os.environ.get("MARKUS_TEST_POSTGRES_URL"))
    parser.add_argument("--disk-full-rounds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--dream", action="store_true", help="kill dreams and dream undos (see _torture_dream)"
    )
    parser.add_argument(
        "--observations", type=int, default=300, help="observations of each --dream agent"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.backend == "postgres" and not args.url:
        parser.error("--backend postgres needs --url (or MARKUS_TEST_POSTGRES_URL)")
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            if key != "details" or value:
                print(f"{key.replace('_', ' '):>30}: {value}")
    if args.dream:
        return 0 if result["inconsistent"] == 0 else 1
    clean = not any(result[k] for k in ("lost", "torn", "duplicated", "failed_writes_found_stored"))
    return 0 if clean and not result["read_only_failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
