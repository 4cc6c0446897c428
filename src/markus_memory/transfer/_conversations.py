"""Sessions and daily logs between a memory that keeps them on files and one that holds them
in its database (documents in PostgreSQL: sessions and logs live there too).

Between two file memories they are plain files, copied byte for byte (``_copy``). Whenever
either side holds them in a database, each is carried in its canonical form instead: a
session as the Markus JSON its checkpoint file holds (messages of its view, the compaction
summary, ``compactedMessages``/``firstSeq``), a daily log as the text of the day's file. A
file memory receives them as files; a database takes each session over (its rows are the
transcript rows the row copy brought, plus each message's exact JSON) and each day's log
whole. Comparing canonical forms is what tells ``replace`` whether the destination loses
anything.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .._conversations import session_rows
from .._fs import atomic_write_bytes, read_text
from .._lock import AgentLock
from ..errors import InvalidInputError
from ..layers.sessions import (
    HeldSessions,
    Sessions,
    SessionStore,
    file_stem,
    session_from_text,
    session_text,
    take_over,
)
from ..storage.repos.conversations import NewEntry
from ._side import Side

SESSIONS = "sessions/"
DAILY_LOGS = "daily-logs/"


def carried(source: Side, target: Side) -> bool:
    """Whether sessions and logs go in canonical form (either side holds them)."""
    return source.database is not None or target.database is not None


def conversation_file(relative: str) -> bool:
    """A path of the agent directory that a canonical copy carries instead."""
    return relative.startswith((SESSIONS, DAILY_LOGS))


@contextmanager
def _sessions(side: Side, agent_id: str) -> Iterator[Sessions]:
    settings = side.settings
    if side.database is not None:
        yield HeldSessions(
            lambda: side.episodic().conversations,
            agent_id,
            settings.limits,
            settings.clock,
            entry_of=_read_only,
        )
        return
    paths = side.paths(agent_id)
    lock = AgentLock(paths.lock, settings.lock_timeout_seconds)
    files = SessionStore(paths, lock, settings.limits, settings.clock, agent_id=agent_id)
    try:
        yield files
    finally:
        files.close()
        lock.close("the transfer is done")


def _read_only(session_id: str, message: object, encoded: str, now: object) -> NewEntry:
    raise InvalidInputError(f"a transfer reads session {session_id!r}; it never appends to it")


def session_texts(side: Side, agent_id: str) -> dict[str, str]:
    """Every session of the agent on ``side``, as its checkpoint file's text."""
    if side.database is None and not side.paths(agent_id).sessions_dir.is_dir():
        return {}
    found = {}
    with _sessions(side, agent_id) as sessions:
        for info in sessions.list():
            session = sessions.get(info.id)
            if session is not None:
                found[session.id] = session_text(session)
    return found


def log_texts(side: Side, agent_id: str) -> dict[str, str]:
    """Every daily log of the agent on ``side``: day → the text of its file."""
    if side.database is not None:
        logs = side.episodic().daily_logs
        return {
            day: logs.daily_log_text(agent_id, day) or "" for day in logs.daily_log_days(agent_id)
        }
    folder = side.paths(agent_id).daily_logs_dir
    if not folder.is_dir():
        return {}
    return {p.stem: read_text(p) or "" for p in sorted(folder.glob("*.md"))}


def differs(source: Side, target: Side, agent_id: str) -> bool:
    """Whether an exact copy would change or remove a session or log the target holds."""
    for read in (session_texts, log_texts):
        mine, theirs = read(source, agent_id), read(target, agent_id)
        if any(mine.get(key) != text for key, text in theirs.items()):
            return True
    return False


def copy_conversations(source: Side, target: Side, agent_id: str, merge: bool) -> int:
    """Give the target the source's sessions and logs (all of them, the target's others
    removed; or with ``merge`` those it lacks); how many were written or removed."""
    changed = 0
    sessions, present = session_texts(source, agent_id), session_texts(target, agent_id)
    for sid, text in sessions.items():
        if present.get(sid) == text or (merge and sid in present):
            continue
        _write_session(target, agent_id, sid, text, replacing=sid in present)
        changed += 1
    logs, held = log_texts(source, agent_id), log_texts(target, agent_id)
    for day, text in logs.items():
        if held.get(day) == text or (merge and day in held):
            continue
        _write_log(target, agent_id, day, text)
        changed += 1
    if not merge:
        for sid in present.keys() - sessions.keys():
            _remove_session(target, agent_id, sid)
            changed += 1
        for day in held.keys() - logs.keys():
            _write_log(target, agent_id, day, None)
            changed += 1
    return changed


def _write_session(target: Side, agent_id: str, sid: str, text: str, *, replacing: bool) -> None:
    session = session_from_text(text)
    if target.database is not None:
        store = target.episodic()
        if replacing:  # the view changes; the rows the row copy brought stay
            store.conversations.forget_conversation_head(agent_id, sid)
        take_over(store, agent_id, session, session_rows(agent_id, session))
        return
    folder = target.paths(agent_id).sessions_dir
    stem = file_stem(sid)
    path = folder / f"{stem}.json"
    atomic_write_bytes(path, text.encode("utf-8"))
    (folder / f"{stem}.jsonl").unlink(missing_ok=True)  # the checkpoint holds every message
    moment = session.last_activity_at.timestamp()
    os.utime(path, (moment, moment))


def _remove_session(target: Side, agent_id: str, sid: str) -> None:
    if target.database is not None:
        target.episodic().conversations.forget_session(agent_id, sid)
        return
    folder = target.paths(agent_id).sessions_dir
    stem = file_stem(sid)
    for name in (f"{stem}.json", f"{stem}.jsonl"):
        (folder / name).unlink(missing_ok=True)


def _write_log(target: Side, agent_id: str, day: str, text: str | None) -> None:
    if target.database is not None:
        target.episodic().daily_logs.replace_daily_log(agent_id, day, text)
        return
    path: Path = target.paths(agent_id).daily_logs_dir / f"{day}.md"
    if text is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write_bytes(path, text.encode("utf-8"))
