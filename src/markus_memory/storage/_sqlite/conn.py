"""SqliteDatabase: connections to ``data.db`` (per thread), transactions and migrations.

Threads: one connection per thread (a sqlite3 connection must not be shared while a
transaction is open). Processes: WAL plus ``busy_timeout=5000``; every write transaction is
``BEGIN IMMEDIATE`` so a writer queues for the lock up front instead of failing when a read
transaction tries to upgrade (which SQLite reports as "database is locked" at once).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ...analysis import quote_fts
from ...errors import ClosedError, InvalidInputError, StorageError
from .._records import EPOCH as EPOCH
from ..migrations import Migrations, SqliteMigrationTarget
from .damage import NOT_WRITTEN, is_damage, known_damage, remember_damage
from .dialect import SQLITE
from .schema import SLOT_SHIFT
from .schema import migrations as markus_migrations
from .wal import WalKeeper

if TYPE_CHECKING:
    from ..dialect import Dialect

BUSY_TIMEOUT_MS = 5000
MMAP_BYTES = 0
"""No memory map: at 1,000,000 messages a recall was no faster with 256 MB mapped (warm median
8.77 against 8.84 ms, a cold process's open and first recall 16.7 against 14.5 ms), and every
connection's map counted the file's pages in the process's RSS again (430 MB of 560 for 300
agents on one file). SQLite's own page cache (CACHE_KIB a connection) keeps what is read."""
CACHE_KIB = 16 * 1024
"""Page cache per connection (connections are shared by every store on a file)."""


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


DAMAGED = (
    "{path} is damaged ({detail}). Derived data can be rebuilt from the memory files: move "
    "the file aside (e.g. to {path}.damaged) and run `markus-memory reindex`. Activities, "
    "mailbox and chat rows exist only in that file: restore them from a backup (or try "
    "`sqlite3 {path}.damaged .recover`)."
)


def damaged(path: Path | str, detail: str) -> str:
    """What to say about a damaged database file, with the way back."""
    return DAMAGED.format(path=path, detail=detail)


def sqlite_error(path: Path, exc: sqlite3.Error, prefix: str = "") -> StorageError:
    """A sqlite error as a StorageError; a damaged file says so and how to recover."""
    if is_damage(exc):
        return StorageError(damaged(path, str(exc)))
    return StorageError(f"{prefix}{path}: {exc}")


def close_leaving_wal(path: Path, conns: Sequence[sqlite3.Connection]) -> None:
    """Close ``conns`` to a damaged file without checkpointing its WAL into it: the last
    connection to close would, and a read-only one, closed last, cannot."""
    try:
        guard: sqlite3.Connection | None = open_sqlite(path, writable=False)[0]
    except sqlite3.Error:
        guard = None
    for conn in conns:
        conn.close()
    if guard is not None:
        guard.close()


class _SharedFile:
    """The connections of one process to one database file, shared by every
    :class:`SqliteDatabase` on that file (one per thread, whatever the number of agents)."""

    def __init__(self, path: Path) -> None:
        self.pid = os.getpid()
        self.local = threading.local()
        self.all: list[sqlite3.Connection] = []
        self.users = 0
        self.migrated: set[str] = set()
        self.read_only = False  # set when the file may only be read (a read-only home)
        self.wal = WalKeeper(path)
        self.damage: str | None = None
        """What said the file is damaged, once something did: from then on nothing is
        written to it (writes are refused, and closing does not checkpoint the WAL in)."""


_FILES: dict[str, _SharedFile] = {}
_FILES_GUARD = threading.Lock()


def _share(path: Path) -> tuple[str, _SharedFile]:
    key = os.path.realpath(path)
    with _FILES_GUARD:
        shared = _FILES.get(key)
        if shared is None or shared.pid != os.getpid():  # a forked child opens its own
            shared = _FILES[key] = _SharedFile(Path(key))
            shared.damage = known_damage(path)
        shared.users += 1
        return key, shared


def _unshare(key: str, shared: _SharedFile) -> list[sqlite3.Connection]:
    """Drop one user; the file's connections once the last is gone (to close them)."""
    with _FILES_GUARD:
        shared.users -= 1
        if shared.users > 0 or shared.pid != os.getpid():
            return []
        if _FILES.get(key) is shared:
            del _FILES[key]
        conns, shared.all = shared.all, []
        shared.local = threading.local()
        return conns


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
    """One SQLite file with the Markus schema applied; repositories hold it (``store.py``).

    Every instance on the same file in a process shares that file's connections (one per
    thread): a host with a thousand agents holds a handful of connections, not thousands.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        extra_migrations: Sequence[Migrations[sqlite3.Connection]] = (),
    ) -> None:
        self.path = Path(path)
        self._closed = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._key, self._shared = _share(self.path)
        self.migrate(markus_migrations)
        for extra in extra_migrations:
            self.migrate(extra)

    # -- connections -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn, read_only = open_sqlite(self.path, writable=not self.read_only)
        except sqlite3.Error as exc:
            raise self._failed(exc, "cannot open ") from exc
        self._shared.read_only = read_only
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        if not read_only:
            conn.execute("PRAGMA foreign_keys = ON")
        if self._shared.damage is not None:
            conn.execute("PRAGMA query_only = 1")
        return conn

    @property
    def read_only(self) -> bool:
        """Whether the file may only be read (a read-only home)."""
        return self._shared.read_only

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode; use :meth:`write` for transactions)."""
        if self._closed:
            raise ClosedError(f"{self.path}: the store is closed")
        shared = self._shared
        conn: sqlite3.Connection | None = getattr(shared.local, "conn", None)
        if conn is None:
            conn = self._connect()
            shared.local.conn = conn
            with _FILES_GUARD:
                shared.all.append(conn)
        return conn

    def _failed(self, exc: sqlite3.Error, prefix: str = "") -> StorageError:
        """``exc`` as a StorageError; a damaged file is remembered as such (see ``damage``)."""
        if is_damage(exc) and self._shared.damage is None:
            self._shared.damage = str(exc)
            remember_damage(self.path, str(exc))
            for conn in list(self._shared.all):  # every thread's connection stops writing
                try:
                    conn.execute("PRAGMA query_only = 1")
                except sqlite3.Error:
                    pass
            return StorageError(damaged(self.path, str(exc)) + NOT_WRITTEN)
        return sqlite_error(self.path, exc, prefix)

    @property
    def damage(self) -> str | None:
        """What said the file is damaged (None: nothing has)."""
        return self._shared.damage

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT); sqlite errors become StorageError.
        Refused once the file was found damaged."""
        if self._shared.damage is not None:
            raise StorageError(damaged(self.path, self._shared.damage) + NOT_WRITTEN)
        conn = self.connection()
        wal = self._shared.wal
        wal.enter()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        except UnicodeEncodeError as exc:
            raise InvalidInputError(f"text cannot be stored as UTF-8: {exc.reason}") from exc
        finally:
            wal.leave()
        wal.bound(conn)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        conn = self.connection()
        wal = self._shared.wal
        wal.enter()
        try:
            yield conn
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        except UnicodeEncodeError as exc:
            raise InvalidInputError(f"text cannot be stored as UTF-8: {exc.reason}") from exc
        finally:
            wal.leave()

    @property
    def dialect(self) -> Dialect:
        """What differs in this backend's SQL and values (:mod:`.dialect`)."""
        return SQLITE

    def migrate(self, migrations: Migrations[sqlite3.Connection]) -> list[str]:
        """Apply a migration set (once per process and file); returns the names applied.

        A read-only or damaged file is only checked: StorageError if it lacks a migration."""
        if migrations.name in self._shared.migrated:
            return []
        conn = self.connection()
        target = SqliteMigrationTarget(conn)
        if self.read_only or self._shared.damage is not None:
            if self._shared.damage is not None:
                why = damaged(self.path, self._shared.damage) + NOT_WRITTEN + " It"
            else:
                why = f"{self.path} is read-only and"
            try:
                done = target.applied(conn, migrations.name)
            except sqlite3.Error as exc:
                raise StorageError(f"{why} has no schema: {exc}") from exc
            missing = [m.name for m in migrations.migrations if m.name not in done]
            if missing:
                raise StorageError(
                    f"{why} needs migrations {', '.join(missing)}: open it once with write access"
                )
            self._shared.migrated.add(migrations.name)
            return []
        try:
            applied = migrations.apply(target)
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        self._shared.migrated.add(migrations.name)
        return applied

    def close(self) -> None:
        """Release this handle; the file's connections close with its last handle. Safe to
        call twice."""
        if self._closed:
            return
        self._closed = True
        conns = _unshare(self._key, self._shared)
        if self._shared.damage is not None:
            close_leaving_wal(self.path, conns)
        else:
            for conn in conns:
                conn.close()
