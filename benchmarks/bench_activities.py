"""Activity search at scale: FTS5 (SqliteStore.search_activities) vs the original's LIKE scan.

    python benchmarks/bench_activities.py                 # 1,000,000 activities, 10 agents
    python benchmarks/bench_activities.py --n 100000      # smaller run
    python benchmarks/bench_activities.py --backend both  # SQLite and PostgreSQL side by side

PostgreSQL (``--backend postgres|both``, server from --database-url or $MARKUS_DATABASE_URL):
the same rows are loaded with COPY into a schema kept between runs (see _pg_activities.py).
With ``both``, the query terms are picked once from the SQLite index and run on both.

The database is built once per parameter set (executemany in big transactions, straight into
the tables the store uses) and cached under benchmarks/.cache/. Query terms are picked from
the index by document frequency (rare ≈ tens of activities, medium ≈ 1 %, common ≥ 30 %), so
the categories mean the same thing at every --n. Prints median and p95 per category for both
methods and the LIKE/FTS ratio of medians.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from markus_memory.analysis import term_text
from markus_memory.storage._sqlite.schema import SLOT_SHIFT
from markus_memory.storage._sqlite.store import SqliteStore

CACHE_DIR = Path(__file__).with_name(".cache")
BUILD_VERSION = 5  # 5: documents of the one analyser's terms (m016)
CHUNK = 50_000
T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z

VERBS = "fix add review deploy refactor investigate update migrate test document".split()
TOOLS = (
    "shell_execute file_read file_write web_fetch memory_save memory_search recall_activity "
    "git_commit git_diff http_request sql_query send_message"
).split()
DIRS = "src lib app tests docs config scripts api web core auth billing search infra".split()
ERRORS = "TimeoutError ENOENT PermissionError ValueError ECONNREFUSED KeyError".split()


def zipf_vocabulary(size: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def rows(n: int, agents: int, seed: int = 7) -> Iterator[tuple[tuple[object, ...], str]]:
    """(agent_activities row, FTS log text) per activity, deterministic for a seed."""
    rng = random.Random(seed)
    vocab = zipf_vocabulary(100_000, rng)
    weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(vocab))]
    cumulative = []
    total = 0.0
    for w in weights:
        total += w
        cumulative.append(total)

    def words(k: int) -> list[str]:
        return rng.choices(vocab, cum_weights=cumulative, k=k)

    for i in range(n):
        agent = f"agent-{i % agents}"
        ms = T0_MS + i * 1000
        tools = rng.sample(TOOLS, rng.randint(0, 3))
        path = f"{rng.choice(DIRS)}/{words(1)[0]}/{words(1)[0]}.{rng.choice(['py', 'ts', 'md'])}"
        ticket = f"PROJ-{rng.randrange(max(1, n // 25))}"  # ids recur in ~25 activities
        label = f"{rng.choice(VERBS).capitalize()} {' '.join(words(3))} ({ticket})"
        error = rng.choice(ERRORS) if rng.random() < 0.1 else ""
        text = " ".join(words(rng.randint(8, 20)))
        summary = (f"Used {', '.join(tools)} on {path}. " if tools else "") + text[:200]
        keywords = ",".join([*tools, *([error] if error else []), path])
        logs = "\n".join([*tools, f"Tool {tools[0]} failed: {error}" if error and tools else ""])
        logs += "\n" + " ".join(words(rng.randint(10, 30)))
        row = (
            f"act-{agent}-{ms}-{i:04x}",
            agent,
            None,
            rng.choice(["task", "chat", "heartbeat", "a2a", "internal"]),
            label,
            None,
            iso(ms),
            iso(ms + 60_000),
            rng.randint(0, 5000),
            len(tools),
            0 if error else 1,
            summary,
            keywords,
            iso(ms),
        )
        yield row, logs


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def build(path: Path, n: int, agents: int) -> None:
    tmp = path.with_suffix(".building")
    for leftover in tmp.parent.glob(tmp.name + "*"):
        leftover.unlink()
    SqliteStore(tmp).close()
    conn = sqlite3.connect(tmp, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    # Same rowid layout as SqliteStore: agent slot << SLOT_SHIFT | n (see sqlite_schema m004).
    conn.executemany(
        "INSERT INTO agent_slots (agent_id, slot) VALUES (?, ?)",
        [(f"agent-{k}", k + 1) for k in range(agents)],
    )
    counters = [0] * agents
    started = time.perf_counter()
    batch: list[tuple[object, ...]] = []
    docs: list[tuple[int, str, str]] = []
    fts: list[tuple[int, str, str, str, str]] = []
    for i, (row, logs) in enumerate(rows(n, agents), start=1):
        k = (i - 1) % agents
        counters[k] += 1
        rowid = ((k + 1) << SLOT_SHIFT) + counters[k]
        batch.append(row)
        docs.append((rowid, str(row[0]), str(row[1])))
        fts.append((rowid, *map(term_text, (str(row[4]), str(row[11]), str(row[12]), logs))))
        if len(batch) == CHUNK:
            flush(conn, batch, docs, fts)
            print(f"  built {i:,} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    flush(conn, batch, docs, fts)
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    tmp.rename(path)


def flush(
    conn: sqlite3.Connection,
    batch: list[tuple[object, ...]],
    docs: list[tuple[int, str, str]],
    fts: list[tuple[int, str, str, str, str]],
) -> None:
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO agent_activities (id, agent_id, mailbox_item_id, type, label, task_id, "
        "started_at, ended_at, total_tokens, total_tools, success, summary, keywords, "
        "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        batch,
    )
    conn.executemany(
        "INSERT INTO activity_search_docs (rowid, activity_id, agent_id) VALUES (?,?,?)", docs
    )
    conn.executemany(
        "INSERT INTO activity_fts (rowid, label, summary, keywords, logs) VALUES (?,?,?,?,?)",
        fts,
    )
    conn.execute("COMMIT")
    batch.clear()
    docs.clear()
    fts.clear()


def pick_terms(conn: sqlite3.Connection, n: int) -> dict[str, list[str]]:
    """Terms by document frequency, read from the index itself."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, activity_fts, row)"
    )
    bands = {
        "rare": (10, 60),
        "medium": (max(2, n // 200), max(3, n // 50)),
        "common": (int(n * 0.3), n),
    }
    picked: dict[str, list[str]] = {}
    for name, (low, high) in bands.items():
        found = conn.execute(
            "SELECT term FROM vocab WHERE doc BETWEEN ? AND ? AND length(term) > 3 "
            "ORDER BY (doc * 2654435761 + length(term) * 40503) % 1000003, term LIMIT 400",
            (low, high),
        ).fetchall()
        terms = [t[0] for t in found]
        random.Random(name).shuffle(terms)
        picked[name] = terms[:6]
    if picked["rare"] and picked["common"]:
        picked["rare+common"] = [
            f"{r} {c}" for r, c in zip(picked["rare"], picked["common"], strict=False)
        ]
    return picked


def like_search(conn: sqlite3.Connection, agent: str, query: str, limit: int) -> list[str]:
    """The original's search_activities: AND of LIKE '%term%' over summary, keywords, label."""
    terms = [t for t in query.lower().split() if len(t) > 1]
    sql = "SELECT id FROM agent_activities WHERE agent_id = ?"
    params: list[object] = [agent]
    for term in terms:
        sql += " AND (LOWER(summary) LIKE ? OR LOWER(keywords) LIKE ? OR LOWER(label) LIKE ?)"
        params.extend([f"%{term}%"] * 3)
    sql += " ORDER BY started_at DESC LIMIT ?"
    params.append(limit)
    return [r[0] for r in conn.execute(sql, params)]


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


SearchFn = Callable[[str, str, int], object]


def measure(
    search: SearchFn, like: SearchFn, agent: str, terms: dict[str, list[str]], repeats: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Per category: (FTS times, LIKE times) in ms."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for category, queries in terms.items():
        fts_times: list[float] = []
        like_times: list[float] = []
        for q in queries:
            search(agent, q, 10)  # warm the cache
            fts_times += timed(lambda q=q: search(agent, q, 10), repeats)
            like_times += timed(lambda q=q: like(agent, q, 10), max(1, repeats // 2))
        out[category] = (fts_times, like_times)
    return out


def report(backend: str, results: dict[str, tuple[list[float], list[float]]], terms) -> None:
    print(f"-- {backend}")
    print(
        f"{'category':<12} {'FTS median':>11} {'FTS p95':>9} {'LIKE median':>12} "
        f"{'LIKE p95':>9} {'LIKE/FTS':>9}  terms"
    )
    for category, (fts_times, like_times) in results.items():
        if not fts_times:
            print(f"{category:<12} (no terms in this band)")
            continue
        fts_med, like_med = statistics.median(fts_times), statistics.median(like_times)
        print(
            f"{category:<12} {fts_med:>9.2f}ms {p95(fts_times):>7.2f}ms {like_med:>10.2f}ms "
            f"{p95(like_times):>7.2f}ms {like_med / fts_med:>8.1f}x  "
            f"{', '.join(terms[category][:3])}"
        )
        print(f"{'':<12} worst FTS {max(fts_times):.2f} ms", file=sys.stderr)


def side_by_side(
    sqlite: dict[str, tuple[list[float], list[float]]],
    postgres: dict[str, tuple[list[float], list[float]]],
) -> None:
    print("-- side by side (medians; same queries, same data)")
    print(
        f"{'category':<12} {'SQLite FTS':>11} {'PG FTS':>9} {'PG/SQLite':>10} "
        f"{'SQLite LIKE':>12} {'PG LIKE':>9}"
    )
    for category in sqlite:
        if not sqlite[category][0] or not postgres[category][0]:
            continue
        lite_fts, pg_fts = (statistics.median(r[category][0]) for r in (sqlite, postgres))
        lite_like, pg_like = (statistics.median(r[category][1]) for r in (sqlite, postgres))
        print(
            f"{category:<12} {lite_fts:>9.2f}ms {pg_fts:>7.2f}ms {pg_fts / lite_fts:>9.2f}x "
            f"{lite_like:>10.2f}ms {pg_like:>7.2f}ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="activities to build")
    parser.add_argument("--agents", type=int, default=10, help="agents sharing the database")
    parser.add_argument("--repeats", type=int, default=5, help="runs per query")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("MARKUS_DATABASE_URL") or os.environ.get("MARKUS_TEST_POSTGRES_URL"),
        help="PostgreSQL server (default: $MARKUS_DATABASE_URL or $MARKUS_TEST_POSTGRES_URL)",
    )
    parser.add_argument("--cache-dir", type=Path, default=CACHE_DIR)
    args = parser.parse_args()
    agent = "agent-3"
    results: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    terms: dict[str, list[str]] = {}
    print(f"n={args.n:,} agents={args.agents} querying as {agent}")

    if args.backend in ("sqlite", "both"):
        args.cache_dir.mkdir(parents=True, exist_ok=True)
        path = args.cache_dir / f"activities-v{BUILD_VERSION}-n{args.n}-a{args.agents}.db"
        if not path.exists():
            print(f"building {path} ...", file=sys.stderr)
            start = time.perf_counter()
            build(path, args.n, args.agents)
            print(f"built in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        store = SqliteStore(path)
        conn = store.database.connection()
        terms = pick_terms(conn, args.n)
        results["sqlite"] = measure(
            lambda a, q, k: store.activities.search_activities(a, q, limit=k),
            lambda a, q, k: like_search(conn, a, q, k),
            agent,
            terms,
            args.repeats,
        )
        report("sqlite", results["sqlite"], terms)
        store.close()

    if args.backend in ("postgres", "both"):
        if not args.database_url:
            parser.error("--backend postgres needs --database-url or $MARKUS_DATABASE_URL")
        import _pg_activities as pg

        pg_store = pg.open_store(args.database_url, args.n, args.agents, BUILD_VERSION, rows)
        if not terms:  # alone: estimate document frequencies from PostgreSQL itself
            terms = pg.pick_terms(pg_store, args.n, args.agents, agent)
        results["postgres"] = measure(
            lambda a, q, k: pg_store.activities.search_activities(a, q, limit=k),
            lambda a, q, k: pg.like_search(pg_store, a, q, k),
            agent,
            terms,
            args.repeats,
        )
        report("postgres", results["postgres"], terms)
        pg_store.close()

    if len(results) == 2:
        side_by_side(results["sqlite"], results["postgres"])


if __name__ == "__main__":
    main()
