"""SqliteDatabase: connections to ``data.db`` (per thread), transactions and migrations.

Threads: one connection per thread (a sqlite3 connection must not be shared while a
transaction is open). Processes: WAL plus ``busy_timeout=5000``; every write transaction is
``BEGIN IMMEDIATE`` so a writer queues for the lock up front instead of failing when a read
transaction tries to upgrade (which SQLite reports as "database is locked" at once).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..config import iso_ms, parse_iso
from ..errors import InvalidInputError, StorageError
from ._records import EPOCH as EPOCH
from ._records import RowDecoder
from .migrations import Migrations, SqliteMigrationTarget
from .sqlite_schema import SLOT_SHIFT
from .sqlite_schema import migrations as markus_migrations

BUSY_TIMEOUT_MS = 5000
# A search ranks by bm25 only match sets up to this size (see bounded_rank).
SEARCH_CANDIDATES = 2000


def to_iso(moment: datetime) -> str:
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware datetimes (UTC)")
    return iso_ms(moment)


def from_iso(text: str | None) -> datetime | None:
    return None if text is None else parse_iso(str(text))


def json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(dict(value), ensure_ascii=False, default=str)


def json_obj(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"raw": text}
    return value if isinstance(value, dict) else {"value": value}


DECODE = RowDecoder(when=from_iso, obj=json_obj)


def quote_fts(term: str) -> str:
    """One literal FTS5 phrase, sqlite-utils style: quotes doubled; NUL and surrogates dropped."""
    clean = term.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    return '"' + clean.replace('"', '""') + '"'


def fts_match(terms: Sequence[str], *, any_term: bool = False) -> str:
    """An FTS5 MATCH expression in which every term is a quoted literal."""
    return (" OR " if any_term else " ").join(quote_fts(t) for t in terms)


def agent_span(conn: sqlite3.Connection, agent_id: str) -> tuple[int, int] | None:
    """The rowid range of an agent's search documents (see m004), None if it has none yet."""
    row = conn.execute("SELECT slot FROM agent_slots WHERE agent_id = ?", (agent_id,)).fetchone()
    if row is None:
        return None
    low = int(row[0]) << SLOT_SHIFT
    return low, low + (1 << SLOT_SHIFT) - 1


def next_rowid(conn: sqlite3.Connection, table: str, column: str, agent_id: str) -> int:
    """The next free rowid of ``agent_id``'s span in ``table`` (call inside a write)."""
    conn.execute(
        "INSERT OR IGNORE INTO agent_slots (agent_id, slot) "
        "SELECT ?, COALESCE(MAX(slot), 0) + 1 FROM agent_slots",
        (agent_id,),
    )
    span = agent_span(conn, agent_id)
    if span is None:  # pragma: no cover - inserted just above
        raise StorageError(f"no search slot for agent {agent_id!r}")
    last = conn.execute(
        f"SELECT MAX({column}) FROM {table} WHERE {column} BETWEEN ? AND ?", span
    ).fetchone()[0]
    return span[0] + 1 if last is None else int(last) + 1


def bounded_rank(
    conn: sqlite3.Connection,
    *,
    fts: str,
    match: str,
    span: tuple[int, int],
    limit: int,
    candidates: int,
    weights: str = "",
    join: str = "",
    where: str = "",
    params: tuple[Any, ...] = (),
) -> tuple[list[tuple[int, float]], list[int] | None]:
    """Rank one agent's FTS matches by bm25 if there are at most ``candidates`` of them.

    Returns ``(ranked, None)`` — (rowid, -bm25) best first — or, when the match set is larger,
    ``([], newest)``: the ``candidates`` newest rowids, for the caller to order by recency.
    bm25 must count every posting of each phrase and score every match, which for a term in
    most of a million rows costs most of a second; the newest-first probe stops early.
    """
    cond = f"{fts} MATCH ? AND {fts}.rowid BETWEEN ? AND ?{where}"
    args = (match, *span, *params)
    newest = [
        int(r[0])
        for r in conn.execute(
            f"SELECT {fts}.rowid FROM {fts}{join} WHERE {cond} ORDER BY {fts}.rowid DESC LIMIT ?",
            (*args, candidates + 1),
        )
    ]
    if len(newest) > candidates:
        return [], newest[:candidates]
    sep = ", " if weights else ""
    rows = conn.execute(
        f"SELECT {fts}.rowid, bm25({fts}{sep}{weights}) AS score FROM {fts}{join} "
        f"WHERE {cond} ORDER BY score, {fts}.rowid DESC LIMIT ?",
        (*args, limit),
    ).fetchall()
    return [(int(r[0]), -float(r[1])) for r in rows], None


def open_sqlite(path: Path, *, writable: bool = True) -> tuple[sqlite3.Connection, bool]:
    """An autocommit connection to ``path`` in WAL mode with a busy timeout, and whether it
    is read-only: in a home without write access the existing file is opened read-only
    (immutable when even its WAL index cannot be made: nobody can write there either), so
    that reading needs no write access. Raises sqlite3.Error when it cannot be opened."""
    if writable:
        try:
            conn = _open(str(path))
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            return conn, False
        except sqlite3.Error:
            if os.access(path.parent, os.W_OK) or not path.is_file():
                raise
    where = f"file:{quote(str(path.resolve()))}"
    try:
        return _open(f"{where}?mode=ro", uri=True), True
    except sqlite3.Error:
        return _open(f"{where}?immutable=1", uri=True), True


def _open(target: str, *, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        target, isolation_level=None, check_same_thread=False, timeout=5.0, uri=uri
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        raise
    return conn


class SqliteDatabase:
    """One SQLite file with the Markus schema applied; subclasses add the repositories."""

    def __init__(
        self,
        path: Path | str,
        *,
        extra_migrations: Sequence[Migrations[sqlite3.Connection]] = (),
        search_candidates: int = SEARCH_CANDIDATES,
    ) -> None:
        self.path = Path(path)
        self.search_candidates = search_candidates
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._closed = False
        self.read_only = False  # set when the file may only be read (a read-only home)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.migrate(markus_migrations)
        for extra in extra_migrations:
            self.migrate(extra)

    # -- connections -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn, read_only = open_sqlite(self.path, writable=not self.read_only)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        self.read_only = read_only
        conn.row_factory = sqlite3.Row
        if not read_only:
            conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode; use :meth:`write` for transactions)."""
        if self._closed:
            raise StorageError(f"{self.path}: the store is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._guard:
                self._all.append(conn)
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT); sqlite errors become StorageError."""
        conn = self.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StorageError(f"{self.path}: {exc}") from exc
        except UnicodeEncodeError as exc:
            raise InvalidInputError(f"text cannot be stored as UTF-8: {exc.reason}") from exc

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        try:
            yield self.connection()
        except sqlite3.Error as exc:
            raise StorageError(f"{self.path}: {exc}") from exc
        except UnicodeEncodeError as exc:
            raise InvalidInputError(f"text cannot be stored as UTF-8: {exc.reason}") from exc

    def migrate(self, migrations: Migrations[sqlite3.Connection]) -> list[str]:
        """Apply a migration set (the search index adds its own); returns the names applied.

        A read-only file is only checked: StorageError if it lacks a migration."""
        conn = self.connection()
        target = SqliteMigrationTarget(conn)
        if not self.read_only:
            return migrations.apply(target)
        try:
            done = target.applied(conn, migrations.name)
        except sqlite3.Error as exc:
            raise StorageError(f"{self.path} is read-only and has no schema: {exc}") from exc
        missing = [m.name for m in migrations.migrations if m.name not in done]
        if missing:
            raise StorageError(
                f"{self.path} is read-only and needs migrations {', '.join(missing)}: "
                "open it once with write access"
            )
        return []

    def close(self) -> None:
        """Close every thread's connection. Safe to call twice."""
        with self._guard:
            conns, self._all = self._all, []
            self._closed = True
        for conn in conns:
            conn.close()
        self._local = threading.local()
