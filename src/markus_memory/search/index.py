"""The derived search index of knowledge.md: SQLite FTS5 (BM25) plus stored embedding vectors.

The index is never a source of truth. :meth:`SearchIndex.sync` makes it equal to the documents it
is given (observations and curated sections of one agent): each document carries a content hash,
changed or vanished documents are replaced or deleted (so trimmed and deleted observations never
come back as ghost hits), and a caller-supplied ``version`` (the knowledge.md file signature) lets
an unchanged corpus skip the diff. :meth:`rebuild` drops and re-derives everything for an agent.

CJK text is indexed as overlapping bigrams (FTS5's ``unicode61`` would keep an unspaced sentence
as one token); every query term is double-quoted, so no query string can break a ``MATCH``.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..analysis import STOP_WORDS
from ..analysis import quote_fts as quote
from ..errors import StorageError
from ..storage.migrations import Migrations, SqliteMigrationTarget
from ..storage.sqlite_conn import open_sqlite
from .keyword import CJK_RUN

DEFAULT_TOKENIZER = "porter unicode61 remove_diacritics 2"

# Stop words are dropped from BM25 queries (markus_memory.analysis, shared with transcript recall).
# Measured on the labelled store of benchmarks/search_quality.py (48 lexical queries, 500
# observations, curated part at its cap), MRR@10: porter+stop 0.958, porter 0.917,
# unicode61+stop 0.847, unicode61 0.822, original keyword 0.787. Stemming and stop words each
# help; "how"/"the" no longer pull every document into the OR. This module's earlier 120-word
# list and analysis' 173-word list score the same (0.958).
SLOT_BITS = 32
_ALNUM_RUN = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class IndexDoc:
    """One searchable document: an observation or a curated section (``kind == "curated"``)."""

    id: str
    kind: str
    text: str

    @property
    def digest(self) -> str:
        return hashlib.blake2b(
            f"{self.kind}\0{self.text}".encode("utf-8", "surrogatepass"), digest_size=16
        ).hexdigest()


@dataclass(frozen=True)
class SyncReport:
    """What one :meth:`SearchIndex.sync` changed."""

    added: int
    updated: int
    removed: int
    skipped: bool


def fts_text(text: str) -> str:
    """``text`` as FTS5 should see it: each CJK run replaced by its overlapping bigrams.

    Lone surrogates (possible in a Python ``str``, never in a UTF-8 file) become U+FFFD.
    """
    text = text.encode("utf-8", "replace").decode("utf-8")
    if not CJK_RUN.search(text):
        return text
    return CJK_RUN.sub(lambda m: " " + " ".join(_grams(m.group(0))) + " ", text)


def _grams(run: str) -> list[str]:
    if len(run) <= 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def fts_terms(tokens: Sequence[str], *, stop_words: frozenset[str] = STOP_WORDS) -> list[str]:
    """The quoted FTS5 terms for search tokens (see :func:`keyword.tokenize`).

    CJK runs become bigrams; Latin parts stay whole (``bip-39`` is the phrase ``"bip 39"``).
    Stop words are dropped unless nothing else would remain.
    """
    terms: list[str] = []
    seen: set[str] = set()
    for token in tokens:
        pieces: list[str] = []
        if CJK_RUN.search(token):
            for run in CJK_RUN.findall(token):
                pieces.extend(_grams(run))
            pieces.extend(p for p in CJK_RUN.split(token) if _ALNUM_RUN.search(p))
        elif _ALNUM_RUN.search(token):
            pieces.append(token)
        for raw in pieces:
            # Only letters and digits reach FTS5: separators mean nothing inside a phrase and a
            # NUL would end the query string early.
            piece = " ".join(_ALNUM_RUN.findall(raw))
            if piece and piece not in seen:
                seen.add(piece)
                terms.append(piece)
    content = [t for t in terms if t not in stop_words]
    return [quote(t) for t in (content or terms)]


def create_schema(conn: sqlite3.Connection, tokenizer: str = DEFAULT_TOKENIZER) -> None:
    """Create the index tables (used by the migration and by evaluation harnesses)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS search_docs ("
        " rowid INTEGER PRIMARY KEY,"
        " agent_id TEXT NOT NULL,"
        " doc_id TEXT NOT NULL,"
        " kind TEXT NOT NULL,"
        " digest TEXT NOT NULL,"
        " UNIQUE (agent_id, doc_id))"
    )
    if not re.fullmatch(r"[a-z0-9_ ]+", tokenizer):
        raise StorageError(f"unexpected FTS5 tokenizer spec {tokenizer!r}")
    # DDL takes no parameters; the spec is one of our constants, checked above.
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(body, tokenize='{tokenizer}')"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS search_vectors ("
        " agent_id TEXT NOT NULL,"
        " doc_id TEXT NOT NULL,"
        " model TEXT NOT NULL,"
        " digest TEXT NOT NULL,"
        " vector BLOB NOT NULL,"
        " PRIMARY KEY (agent_id, doc_id, model))"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS search_state ("
        " agent_id TEXT PRIMARY KEY, version TEXT NOT NULL)"
    )
    _create_agent_slots(conn)


def _create_agent_slots(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS search_agents ("
        " agent_id TEXT PRIMARY KEY, slot INTEGER NOT NULL UNIQUE)"
    )


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection in autocommit mode with WAL and a busy timeout (several processes write);
    read-only in a home without write access."""
    if str(path) == ":memory:":
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn
    return open_sqlite(Path(path))[0]


class KnowledgeIndex(Protocol):
    """What MemorySearcher needs from an index: :class:`SearchIndex` (SQLite) or
    :class:`~markus_memory.search.pg_index.PostgresSearchIndex`."""

    def version(self, agent_id: str) -> str | None: ...

    def sync(
        self, agent_id: str, docs: Iterable[IndexDoc], version: str | None = None
    ) -> SyncReport: ...

    def rebuild(
        self, agent_id: str, docs: Iterable[IndexDoc], version: str | None = None
    ) -> SyncReport: ...

    def drop(self, agent_id: str) -> None: ...

    def doc_ids(self, agent_id: str) -> set[str]: ...

    def bm25(
        self, agent_id: str, tokens: Sequence[str], limit: int = 50
    ) -> list[tuple[str, float]]: ...

    def vector_digests(self, agent_id: str, model: str) -> dict[str, str]: ...

    def put_vectors(
        self, agent_id: str, model: str, items: Iterable[tuple[str, str, bytes]]
    ) -> None: ...

    def vectors(self, agent_id: str, model: str) -> list[tuple[str, bytes]]: ...

    def close(self) -> None: ...


class SearchIndex:
    """BM25 and vector storage for the knowledge.md documents of any number of agents."""

    def __init__(self, conn: sqlite3.Connection, *, stop_words: frozenset[str] = STOP_WORDS):
        if conn.isolation_level is not None:
            raise StorageError("SearchIndex needs a connection opened with isolation_level=None")
        self.conn = conn
        self.stop_words = stop_words
        self._lock = threading.RLock()
        self._slots: dict[str, int] = {}

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    # -- writing ---------------------------------------------------------------------------

    def version(self, agent_id: str) -> str | None:
        """The corpus version last synced for ``agent_id``."""
        with self._lock:
            row = self.conn.execute(
                "SELECT version FROM search_state WHERE agent_id = ?", (agent_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def sync(
        self, agent_id: str, docs: Iterable[IndexDoc], version: str | None = None
    ) -> SyncReport:
        """Make the agent's index hold exactly ``docs``; a matching ``version`` skips the work."""
        with self._lock:
            if version is not None and self.version(agent_id) == version:
                return SyncReport(0, 0, 0, skipped=True)
            wanted = {doc.id: doc for doc in docs}
            with self._write():
                rows = self.conn.execute(
                    "SELECT doc_id, rowid, digest FROM search_docs WHERE agent_id = ?", (agent_id,)
                ).fetchall()
                have = {str(r[0]): (int(r[1]), str(r[2])) for r in rows}
                removed = [
                    (doc_id, rowid) for doc_id, (rowid, _) in have.items() if doc_id not in wanted
                ]
                added = updated = 0
                low, high = self._writable_span(agent_id)
                row = self.conn.execute(
                    "SELECT max(rowid) FROM search_docs WHERE rowid BETWEEN ? AND ?", (low, high)
                ).fetchone()
                next_rowid = low if row[0] is None else int(row[0]) + 1
                for doc_id, rowid in removed:
                    self._delete(agent_id, doc_id, rowid)
                for doc in wanted.values():
                    digest = doc.digest
                    current = have.get(doc.id)
                    if current is not None and current[1] == digest:
                        continue
                    if current is not None:
                        self._delete(agent_id, doc.id, current[0])
                        updated += 1
                    else:
                        added += 1
                    if next_rowid > high:
                        raise StorageError(f"search index slot of {agent_id!r} is full; rebuild")
                    self.conn.execute(
                        "INSERT INTO search_docs (rowid, agent_id, doc_id, kind, digest)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (next_rowid, agent_id, doc.id, doc.kind, digest),
                    )
                    self.conn.execute(
                        "INSERT INTO search_fts (rowid, body) VALUES (?, ?)",
                        (next_rowid, fts_text(doc.text)),
                    )
                    next_rowid += 1
                self._set_version(agent_id, version)
            return SyncReport(added, updated, len(removed), skipped=False)

    def rebuild(
        self, agent_id: str, docs: Iterable[IndexDoc], version: str | None = None
    ) -> SyncReport:
        """Drop everything indexed for ``agent_id`` (vectors too) and index ``docs`` afresh."""
        with self._lock:
            self.drop(agent_id)
            return self.sync(agent_id, docs, version)

    def drop(self, agent_id: str) -> None:
        """Forget ``agent_id`` entirely."""
        with self._lock, self._write():
            low, high = self._writable_span(agent_id)
            self.conn.execute("DELETE FROM search_fts WHERE rowid BETWEEN ? AND ?", (low, high))
            self.conn.execute("DELETE FROM search_docs WHERE rowid BETWEEN ? AND ?", (low, high))
            self.conn.execute("DELETE FROM search_vectors WHERE agent_id = ?", (agent_id,))
            self.conn.execute("DELETE FROM search_state WHERE agent_id = ?", (agent_id,))

    def _span(self, agent_id: str, *, create: bool = True) -> tuple[int, int] | None:
        """The rowid range of ``agent_id``'s documents (its slot, assigned on first use).

        Each agent owns ``[slot << 32, (slot + 1) << 32)``, so a BM25 query is a rowid range
        scan of one agent's postings instead of a filter over every agent's matches.
        """
        slot = self._slots.get(agent_id)
        if slot is None and not create:
            row = self.conn.execute(
                "SELECT slot FROM search_agents WHERE agent_id = ?", (agent_id,)
            ).fetchone()
            if row is None:
                return None
            slot = int(row[0])
            self._slots[agent_id] = slot
        if slot is None:
            with self._write():
                row = self.conn.execute(
                    "SELECT slot FROM search_agents WHERE agent_id = ?", (agent_id,)
                ).fetchone()
                if row is None and not create:
                    return None
                if row is None:
                    row = self.conn.execute(
                        "INSERT INTO search_agents (agent_id, slot) VALUES"
                        " (?, (SELECT coalesce(max(slot), 0) + 1 FROM search_agents))"
                        " RETURNING slot",
                        (agent_id,),
                    ).fetchone()
                slot = int(row[0])
            self._slots[agent_id] = slot
        return slot << SLOT_BITS, ((slot + 1) << SLOT_BITS) - 1

    def _writable_span(self, agent_id: str) -> tuple[int, int]:
        span = self._span(agent_id)
        assert span is not None
        return span

    def _delete(self, agent_id: str, doc_id: str, rowid: int) -> None:
        self.conn.execute("DELETE FROM search_fts WHERE rowid = ?", (rowid,))
        self.conn.execute("DELETE FROM search_docs WHERE rowid = ?", (rowid,))
        self.conn.execute(
            "DELETE FROM search_vectors WHERE agent_id = ? AND doc_id = ?", (agent_id, doc_id)
        )

    def _set_version(self, agent_id: str, version: str | None) -> None:
        if version is None:
            self.conn.execute("DELETE FROM search_state WHERE agent_id = ?", (agent_id,))
        else:
            self.conn.execute(
                "INSERT INTO search_state (agent_id, version) VALUES (?, ?)"
                " ON CONFLICT (agent_id) DO UPDATE SET version = excluded.version",
                (agent_id, version),
            )

    def _write(self) -> _Transaction:
        return _Transaction(self.conn)

    # -- reading ---------------------------------------------------------------------------

    def doc_ids(self, agent_id: str) -> set[str]:
        with self._lock:
            rows = self.conn.execute(
                "SELECT doc_id FROM search_docs WHERE agent_id = ?", (agent_id,)
            ).fetchall()
        return {str(r[0]) for r in rows}

    def bm25(
        self, agent_id: str, tokens: Sequence[str], limit: int = 50
    ) -> list[tuple[str, float]]:
        """``(doc_id, score)`` best first (score = -bm25, higher is better); OR over the terms."""
        terms = fts_terms(tokens, stop_words=self.stop_words)
        if not terms or limit <= 0:
            return []
        with self._lock:
            span = self._span(agent_id, create=False)
            if span is None:
                return []
            low, high = span
            rows = self.conn.execute(
                "SELECT d.doc_id, bm25(search_fts) AS rank FROM search_fts"
                " JOIN search_docs d ON d.rowid = search_fts.rowid"
                " WHERE search_fts MATCH ? AND search_fts.rowid BETWEEN ? AND ?"
                " ORDER BY rank LIMIT ?",
                (" OR ".join(terms), low, high, limit),
            ).fetchall()
        return [(str(r[0]), -float(r[1])) for r in rows]

    # -- vectors ---------------------------------------------------------------------------

    def vector_digests(self, agent_id: str, model: str) -> dict[str, str]:
        with self._lock:
            rows = self.conn.execute(
                "SELECT doc_id, digest FROM search_vectors WHERE agent_id = ? AND model = ?",
                (agent_id, model),
            ).fetchall()
        return {str(r[0]): str(r[1]) for r in rows}

    def put_vectors(
        self, agent_id: str, model: str, items: Iterable[tuple[str, str, bytes]]
    ) -> None:
        """Store ``(doc_id, digest, float32 bytes)`` for ``model``; other models' vectors go."""
        with self._lock, self._write():
            self.conn.execute(
                "DELETE FROM search_vectors WHERE agent_id = ? AND model != ?", (agent_id, model)
            )
            self.conn.executemany(
                "INSERT INTO search_vectors (agent_id, doc_id, model, digest, vector)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, doc_id, model)"
                " DO UPDATE SET digest = excluded.digest, vector = excluded.vector",
                ((agent_id, doc_id, model, digest, blob) for doc_id, digest, blob in items),
            )

    def vectors(self, agent_id: str, model: str) -> list[tuple[str, bytes]]:
        """Every stored ``(doc_id, float32 bytes)`` of ``model`` whose document still exists."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT v.doc_id, v.vector FROM search_vectors v"
                " JOIN search_docs d ON d.agent_id = v.agent_id AND d.doc_id = v.doc_id"
                " AND d.digest = v.digest WHERE v.agent_id = ? AND v.model = ?"
                " ORDER BY v.doc_id",
                (agent_id, model),
            ).fetchall()
        return [(str(r[0]), bytes(r[1])) for r in rows]


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (rollback on error); re-entrant on one connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.outer = False

    def __enter__(self) -> sqlite3.Connection:
        self.outer = not self.conn.in_transaction
        if self.outer:
            self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self.outer:
            return
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")


migrations: Migrations[sqlite3.Connection] = Migrations("search-index")


@migrations()
def m001_knowledge_index(conn: sqlite3.Connection) -> None:
    create_schema(conn)


@migrations()
def m002_agent_slots(conn: sqlite3.Connection) -> None:
    # Documents move to per-agent rowid ranges. The index is derived: empty it and let the next
    # search of each agent re-index (its version no longer matches).
    for table in ("search_fts", "search_docs", "search_vectors", "search_state"):
        conn.execute(f"DELETE FROM {table}")
    _create_agent_slots(conn)


SEARCH_TABLES = ("search_fts", "search_docs", "search_vectors", "search_state", "search_agents")


def recreate_schema(path: Path | str) -> None:
    """Drop and create the search tables again, empty (they are derived from knowledge.md:
    each agent's next search, or ``reindex``, fills them). Repairs a missing or damaged one."""
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for table in SEARCH_TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        create_schema(conn)
        _create_agent_slots(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()


def ensure_schema(conn: sqlite3.Connection) -> list[str]:
    """Apply the ``search-index`` migration set to ``conn``; returns the names applied."""
    return migrations.apply(SqliteMigrationTarget(conn))


def open_index(path: Path | str) -> SearchIndex:
    """Open (creating) the search index stored in the SQLite file at ``path``."""
    conn = connect(path)
    ensure_schema(conn)
    return SearchIndex(conn)
