"""Many hosts, one PostgreSQL database: throughput, tail latency, and every acknowledged write
read back from a fresh host.

H host processes (each with its own empty temporary ``MARKUS_HOME``) × W worker threads (the
same total split across the hosts) run for T seconds against one fresh schema of the database
(dropped afterwards), a mix on shared and private agents through the public API: session
appends, observations, notebook and state updates, activities, ``recall_conversation``,
``memory_search``, and one offline dream of its own agent. Every write is logged by its host
(op, agent, key, digest, acknowledged or failed); then a checker process with a fresh empty
home reads everything back (:mod:`benchmarks._hosts_check`) and each surviving host reports
what it reads, to compare.

``--kill`` SIGKILLs host 0 halfway (its acknowledged writes must all be there); ``--proxy``
runs every host through :mod:`benchmarks._tcp_proxy`, which resets all connections at random
moments (``--cut-every`` seconds apart on average): acknowledged writes all there, failed ones
counted as failed, hosts reconnecting by themselves. ``--compare`` runs H = 1, 2, 4 side by
side.

    python -m benchmarks.bench_hosts --hosts 4 --workers 8 --seconds 30
    python -m benchmarks.bench_hosts --compare --seconds 20
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from benchmarks._cpu import CpuMeter
from benchmarks._hosts_check import check, same_state
from benchmarks._hosts_ops import (
    DREAMER,
    LIMITS,
    SHARED,
    Log,
    Stats,
    Worker,
    fingerprint,
    private_agent,
    session_id,
    shared_agent,
)
from benchmarks._tcp_proxy import TcpProxy
from markus_memory import MarkusMemoryError, Settings, open_agent

DEFAULT_URL = os.environ.get(
    "MARKUS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
ROOT = Path(__file__).resolve().parent.parent


def schema_url(url: str, schema: str) -> str:
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-csearch_path={schema}')}"


def settings(home: Path, url: str) -> Settings:
    return Settings(home=home, database_url=url, limits=LIMITS)


def _wait_for(path: Path, timeout: float) -> bool:
    deadline = time.time() + timeout
    while not path.exists():
        if time.time() > deadline:
            return False
        time.sleep(0.02)
    return True


# ---- one host ------------------------------------------------------------------------------


def host_main(args: argparse.Namespace) -> None:
    """A host process: open its agents, wait for ``go``, run the workers, report."""
    run, host = Path(args.run), args.host
    workers = [w for w in range(args.total_workers) if w % args.hosts == host]
    with tempfile.TemporaryDirectory(prefix=f"bench-host{host}-") as home:
        config = settings(Path(home), args.url)
        agents = [shared_agent(n) for n in range(SHARED)] + [
            private_agent(host, w) for w in workers
        ]
        if host == 0:
            agents.append(DREAMER)
        memories = {a: open_agent(a, settings=config) for a in agents}
        (run / f"ready-{host}").touch()
        _wait_for(run / "go", 600)
        start = float((run / "go").read_text())
        stop_at = start + args.seconds
        stats = Stats()
        with (run / f"writes-{host}.jsonl").open("a") as file:
            log = Log(file)
            threads, results = [], []
            for w in workers:
                worker = Worker(host, w, memories, log, seed=host * 1000 + w)
                thread = threading.Thread(target=lambda k=worker: results.append(k.run(stop_at)))
                threads.append(thread)
            if host == 0:
                threads.append(
                    threading.Thread(target=_dream, args=(memories[DREAMER], start, args, stats))
                )
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        for result in results:
            stats.merge(result)
        (run / f"done-{host}").touch()
        _wait_for(run / "read", 600)
        shared = {a: m for a, m in memories.items() if a.startswith("bench_shared_")}
        view = _read_view(shared, _sessions(args.hosts, args.total_workers))
        report = {
            "host": host,
            "latencies": stats.latencies,
            "failures": stats.failures,
            "errors": stats.errors,
            "fingerprint": view,
        }
        (run / f"result-{host}.json").write_text(json.dumps(report))
        for mem in memories.values():
            mem.close()


def _read_view(memories: dict[str, Any], sessions: list[tuple[str, str]]) -> dict[str, Any]:
    """:func:`fingerprint`, tried again while the database is unreachable (reads are safe to
    repeat; a host that cannot read after that reports why)."""
    for attempt in range(10):
        try:
            view = fingerprint(memories, sessions)
            view["read attempts"] = attempt + 1
            return view
        except MarkusMemoryError as exc:
            failure = f"{type(exc).__name__}: {exc}"
            time.sleep(1 + attempt)
    return {"documents": {"unreadable": failure}, "sessions": {}}


def _sessions(hosts: int, workers: int) -> list[tuple[str, str]]:
    """Every session a worker may have appended to on a shared agent."""
    return [
        (shared_agent(n), session_id(w % hosts, w)) for n in range(SHARED) for w in range(workers)
    ]


def _dream(mem: Any, start: float, args: argparse.Namespace, stats: Stats) -> None:
    """Seed the dreamer's observations (near-duplicates to merge), then dream once, a third
    of the way in."""
    from markus_memory.dream import dream

    try:
        for n in range(60):
            mem.knowledge.save_observation(f"the build server is in rack {n % 20}")
        time.sleep(max(0.0, start + args.seconds / 3 - time.time()))
        began = time.perf_counter()
        report = dream(mem)
    except MarkusMemoryError as exc:
        stats.failures["dream"] = 1
        stats.errors["dream"] = f"{type(exc).__name__}: {exc}"[:300]
        return
    stats.latencies.setdefault("dream", []).append((time.perf_counter() - began) * 1e3)
    if report.status == "failed":
        stats.failures["dream"] = 1
        stats.errors["dream"] = f"{report.status}: {report.error}"
    stats.errors["dream status"] = report.status


# ---- the run -------------------------------------------------------------------------------


@contextmanager
def fresh_schema(url: str) -> Any:
    import psycopg

    schema = f"bench_hosts_{secrets.token_hex(5)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema_url(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def run_once(
    url: str,
    hosts: int,
    workers: int,
    seconds: float,
    *,
    kill: bool = False,
    cut_every: float | None = None,
    before_check: Any = None,
) -> dict[str, Any]:
    """One run on a fresh schema; the figures, the checker's tallies and the hosts' views.
    ``before_check(url)`` runs between the hosts' end and the checker (tests change the
    data behind the checker's back there)."""
    with fresh_schema(url) as schema, tempfile.TemporaryDirectory(prefix="bench-hosts-") as tmp:
        run = Path(tmp)
        with (
            tempfile.TemporaryDirectory() as home,
            open_agent(shared_agent(0), settings=settings(Path(home), schema)),
        ):
            pass  # the schema is migrated once, before the hosts race to it
        proxy = TcpProxy() if cut_every else None
        host_url = proxy.url(schema) if proxy is not None else schema
        procs = [_spawn(run, i, hosts, workers, seconds, host_url) for i in range(hosts)]
        try:
            for i in range(hosts):
                if not _wait_for(run / f"ready-{i}", 300):
                    raise RuntimeError(f"host {i} did not start")
            meter = CpuMeter(p.pid for p in procs)
            (run / "go.tmp").write_text(str(time.time() + 0.2))
            (run / "go.tmp").replace(run / "go")  # whole when a host sees it
            if proxy is not None and cut_every:
                proxy.chaos(cut_every, seed=hosts)
            if kill:
                time.sleep(0.2 + seconds / 2)
                procs[0].send_signal(signal.SIGKILL)
            alive = [i for i in range(hosts) if not (kill and i == 0)]
            for i in alive:
                _wait_for(run / f"done-{i}", seconds + 300)
            cpu = meter.read()
            cuts = 0
            if proxy is not None:
                proxy.calm()
                cuts = proxy.cuts
            (run / "read").touch()
            for i in alive:
                procs[i].wait(300)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            if proxy is not None:
                proxy.close()
        if before_check is not None:
            before_check(schema)
        results = [json.loads(p.read_text()) for p in sorted(run.glob("result-*.json"))]
        verdict = _checker(run, schema, hosts, workers)
        return {
            "hosts": hosts,
            "workers": workers,
            "seconds": seconds,
            "killed": kill,
            "cuts": cuts,
            "figures": figures(results, seconds),
            "notes": {k: v for r in results for k, v in r["errors"].items()},
            "read_attempts": [r["fingerprint"].get("read attempts") for r in results],
            "check": verdict["check"],
            "views": same_state(results + [verdict]),
            "cpu": cpu,
        }


def _spawn(run: Path, host: int, hosts: int, workers: int, seconds: float, url: str) -> Any:
    command = [sys.executable, "-m", "benchmarks.bench_hosts", "--as-host", str(host)]
    command += ["--run", str(run), "--hosts", str(hosts), "--workers", str(workers)]
    command += ["--seconds", str(seconds), "--url", url]
    return subprocess.Popen(command, cwd=ROOT)


def _checker(run: Path, url: str, hosts: int, workers: int) -> dict[str, Any]:
    """The checker in a process of its own with a fresh empty home."""
    command = [sys.executable, "-m", "benchmarks.bench_hosts", "--as-checker", "--run", str(run)]
    command += ["--url", url, "--hosts", str(hosts), "--workers", str(workers)]
    subprocess.run(command, cwd=ROOT, check=True)
    result: dict[str, Any] = json.loads((run / "check.json").read_text())
    return result


def checker_main(args: argparse.Namespace) -> None:
    run = Path(args.run)
    with tempfile.TemporaryDirectory(prefix="bench-checker-") as home:
        config = settings(Path(home), args.url)
        tallies = check(run, lambda agent: open_agent(agent, settings=config))
        memories = {
            shared_agent(n): open_agent(shared_agent(n), settings=config) for n in range(SHARED)
        }
        try:
            view = fingerprint(memories, _sessions(args.hosts, args.total_workers))
        finally:
            for mem in memories.values():
                mem.close()
    (run / "check.json").write_text(json.dumps({"check": tallies, "fingerprint": view}))


# ---- figures -------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def figures(results: list[dict[str, Any]], seconds: float) -> dict[str, dict[str, float]]:
    """Per operation: successful calls a second, failures, p50 and p99 in ms."""
    merged = Stats()
    for result in results:
        merged.merge(Stats(result["latencies"], result["failures"], result["errors"]))
    out = {}
    for op in sorted(set(merged.latencies) | set(merged.failures)):
        values = merged.latencies.get(op, [])
        out[op] = {
            "count": len(values),
            "per_s": len(values) / seconds,
            "failed": merged.failures.get(op, 0),
            "p50": statistics.median(values) if values else float("nan"),
            "p99": _pct(values, 0.99),
        }
    return out


def print_run(result: dict[str, Any]) -> None:
    mode = " (host 0 SIGKILLed)" if result["killed"] else ""
    mode += f" (connections cut {result['cuts']} times)" if result["cuts"] else ""
    print(f"\nH={result['hosts']} W={result['workers']} T={result['seconds']:g}s{mode}")
    print(f"{'op':10} {'ok/s':>8} {'failed':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for op, f in result["figures"].items():
        print(f"{op:10} {f['per_s']:8.1f} {f['failed']:7d} {f['p50']:8.1f} {f['p99']:8.1f}")
    print(
        f"{'check':10} {'acked':>7} {'failed':>7} {'lost':>5} {'dup':>4} {'torn':>5} {'phantom':>8}"
    )
    total = 0
    for op, t in result["check"].items():
        total += t["acked"]
        print(
            f"{op:10} {t['acked']:7d} {t['failed']:7d} {t['lost']:5d} {t['duplicated']:4d} "
            f"{t['torn']:5d} {t['phantom']:8d}"
        )
    lost = sum(t["lost"] for t in result["check"].values())
    print(f"acknowledged writes checked: {total}, lost {lost}; same view: {result['views']}")
    print(f"attempts each host needed for its final reads: {result['read_attempts']}")
    cpu = result.get("cpu")
    if cpu:
        print(
            f"cores used of {cpu['cores']:.0f}: {cpu['busy']:.2f} (hosts {cpu['hosts']:.2f}, "
            f"PostgreSQL {cpu['postgres']:.2f}, the rest of the machine "
            f"{max(0.0, cpu['busy'] - cpu['hosts'] - cpu['postgres']):.2f})"
        )
    for op, note in sorted(result["notes"].items()):
        print(f"  {op}: {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--workers", type=int, default=8, help="total worker threads")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--kill", action="store_true")
    parser.add_argument("--proxy", action="store_true")
    parser.add_argument("--cut-every", type=float, default=1.0)
    parser.add_argument("--compare", action="store_true", help="H = 1, 2, 4")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--as-host", type=int, dest="host", help=argparse.SUPPRESS)
    parser.add_argument("--as-checker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.total_workers = args.workers
    if args.host is not None:
        # A cut connection makes the background transcript writer log each retry with its
        # traceback; the workers count failures themselves.
        logging.disable(logging.ERROR)
        host_main(args)
        return
    if args.as_checker:
        checker_main(args)
        return
    counts = (1, 2, 4) if args.compare else (args.hosts,)
    results = []
    for hosts in counts:
        result = run_once(
            args.url,
            hosts,
            args.workers,
            args.seconds,
            kill=args.kill,
            cut_every=args.cut_every if args.proxy else None,
        )
        print_run(result)
        results.append(result)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
