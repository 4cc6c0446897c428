"""Large transcript fixtures for the recall benchmarks, built once and cached.

Messages are synthetic chat (a Zipf-distributed vocabulary of 20,000 made-up words, 6-30 words
a message) recorded straight into the episodic store through ``import_transcript`` (the same
path the background writer uses, so the recall index is built exactly as in use), one
transaction per session. SQLite fixtures live under ``benchmarks/.cache/<name>/`` (an agent home
with its ``data.db``; ``MARKUS_BENCH_CACHE`` names another directory, so several checkouts can
share one build); PostgreSQL fixtures in a schema ``bench_<name>`` of the server. A marker
written last says the fixture is complete; an interrupted build starts again.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import secrets
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

from markus_memory.storage.episodic import EpisodicStore
from markus_memory.storage.repos.transcripts import TranscriptMessage

CACHE = Path(os.environ.get("MARKUS_BENCH_CACHE") or Path(__file__).parent / ".cache")
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


class Chat:
    """Deterministic synthetic messages and queries made of their words."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        self.cum = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(self.words))))

    def text(self) -> str:
        k = self.rng.randint(6, 30)
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum, k=k))

    def queries(self, n: int, seed: int = 11) -> list[str]:
        rng = random.Random(seed)
        out = []
        for _ in range(n):
            sample = rng.choices(self.words, cum_weights=self.cum, k=rng.randint(6, 30))
            out.append(" ".join(rng.sample(sample, 3)))
        return out


def sessions(
    agent_id: str, messages: int, per_session: int, chat: Chat
) -> Iterator[tuple[str, list[TranscriptMessage]]]:
    n = 0
    s = 0
    while n < messages:
        sid = f"chat_{s}"
        batch = []
        for i in range(min(per_session, messages - n)):
            role = "user" if i % 2 == 0 else "assistant"
            stamp = T0 + timedelta(minutes=n)
            batch.append(TranscriptMessage(agent_id, sid, i, role, chat.text(), stamp, None, None))
            n += 1
        yield sid, batch
        s += 1


def pg_schema_url(url: str, schema: str) -> str:
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-csearch_path={schema}')}"


@contextlib.contextmanager
def fresh_pg_schema(url: str, prefix: str) -> Iterator[str]:
    """A URL whose connections live in a new schema ``<prefix>_<random>`` of the server at
    ``url``, dropped on exit: a run records nothing where it was pointed, and two runs never
    share agents."""
    import psycopg

    schema = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield pg_schema_url(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def open_fixture_store(name: str, pg_url: str | None) -> tuple[EpisodicStore, Path, str | None]:
    """The fixture's store, its agent home, and its database URL (PostgreSQL only)."""
    home = CACHE / name
    home.mkdir(parents=True, exist_ok=True)
    if pg_url is None:
        from markus_memory.storage._sqlite.store import SqliteStore

        return SqliteStore(home / "data.db"), home, None
    import psycopg

    schema = f"bench_{name.replace('-', '_')}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    from markus_memory.storage._postgres.store import PostgresStore

    url = pg_schema_url(pg_url, schema)
    return PostgresStore(url), home, url


def settle(url: str | None) -> None:
    """On PostgreSQL, what autovacuum does in use (the test server runs without it): a VACUUM
    ANALYZE of the fixture's schema, so rows a benchmark added and took out again leave no dead
    index entries behind for the next run to step over."""
    if url is None:
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        conn.execute(f"VACUUM ANALYZE {', '.join(t[0] for t in tables)}")


def build(
    name: str,
    agents: list[str],
    messages_per_agent: int,
    *,
    per_session: int = 1_000,
    pg_url: str | None = None,
) -> tuple[Path, str | None, float | None]:
    """Build (or reuse) a fixture: its home, database URL, and ingest µs per message when
    built now (None when cached)."""
    backend = "pg" if pg_url else "sqlite"
    store, home, url = open_fixture_store(f"{name}-{backend}", pg_url)
    marker = home / f"complete-{backend}"
    if marker.exists():
        store.close()
        return home, url, None
    store.close()
    if pg_url is None:
        (home / "data.db").unlink(missing_ok=True)
    else:
        import psycopg

        schema = f"bench_{name.replace('-', '_')}_{backend}"
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    store, home, url = open_fixture_store(f"{name}-{backend}", pg_url)
    chat = Chat()
    started = time.perf_counter()
    total = 0
    for n, agent in enumerate(agents):
        for sid, batch in sessions(agent, messages_per_agent, per_session, chat):
            store.transcripts.import_transcript(agent, sid, batch, synced_at=batch[-1].created_at)
            total += len(batch)
        if n % 100 == 0 or total % 100_000 == 0:
            print(
                f"  [{name}/{backend}] {total} messages in {time.perf_counter() - started:.0f}s",
                flush=True,
            )
    elapsed = time.perf_counter() - started
    store.close()
    settle(url)
    marker.write_text(f"{total} messages in {elapsed:.1f}s\n")
    return home, url, elapsed / total * 1e6


def local_embedder(enabled: bool) -> object | None:
    """The local MiniLM for a hybrid run (None when ``enabled`` is false, or with a note when
    the ``[semantic]`` extra is not installed)."""
    if not enabled:
        return None
    try:
        from markus_memory import MiniLMEmbedder

        return MiniLMEmbedder()
    except ImportError:
        import sys

        print("[semantic] extra not installed: vectors skipped", file=sys.stderr)
        return None
