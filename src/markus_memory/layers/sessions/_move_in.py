"""Moving an agent's session files into the database, once, losing nothing.

When the documents live in PostgreSQL, the Markus sessions do too (:mod:`._held`). Session
files an earlier version (or a SQLite home, exported) left in the agent directory are moved in
when the agent is opened: each file's messages are recorded in the store (the rows it holds
already, compacted ones included, are kept), the store takes the session over with the file's
view (its compaction summary and where the view starts) and each message's exact JSON, and only
then is the file deleted. Each session is one transaction; run again after a kill, a session
already taken over is left as it is and its file deleted: nothing is doubled or lost.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from ...config import iso_ms
from ...errors import CorruptFileError, InvalidInputError
from ...storage.episodic import EpisodicStore
from ...storage.repos.transcripts import TranscriptMessage
from . import _format as fmt
from ._compaction import session_of
from ._records import Session
from ._store import SessionStore

log = logging.getLogger(__name__)

KIND = "markus"


def move_in(
    files: SessionStore,
    store: EpisodicStore,
    rows_of: Callable[[Session], list[TranscriptMessage]],
) -> int:
    """Move every session file of ``files`` into ``store``; the number moved. A file that
    cannot be parsed stays where it is (logged) for ``doctor`` to report."""
    moved = 0
    for info in files.list():
        try:
            session = files.get(info.id)
        except (CorruptFileError, InvalidInputError) as exc:
            log.warning("session file %s not moved into the database: %s", info.id, exc)
            continue
        if session is None:
            continue
        if store.conversations.conversation(files.agent_id, session.id) is not None:
            log.warning(
                "session file %s not moved into the database: the database already holds a "
                "session under that id (kept on file)",
                session.id,
            )
            continue
        take_over(store, files.agent_id, session, rows_of(session))
        files.delete(session.id)
        moved += 1
    return moved


def take_over(
    store: EpisodicStore, agent_id: str, session: Session, rows: list[TranscriptMessage]
) -> None:
    """Make ``store`` hold ``session``: its rows recorded (those held kept), its view and
    each message's exact JSON, and the file's keys beyond Markus's own as its details. A
    session the store already holds is left as it is."""
    sid = session.id
    if rows:
        store.transcripts.import_transcript(agent_id, sid, rows, synced_at=session.last_activity_at)
    held = store.transcripts.transcript_messages(agent_id, session_id=sid)
    bodies = []
    for index, message in enumerate(session.messages):
        seq = session.seq(index)
        if seq is not None:
            bodies.append((seq, json.dumps(message, ensure_ascii=False, separators=(",", ":"))))
    next_seq = max([session.first_seq, *(m.seq + 1 for m in held), *(s + 1 for s, _ in bodies)])
    first_seq = min([session.first_seq, *(m.seq for m in held)])
    summary = None
    view_from = first_seq
    if session.compacted > 0:
        summary = json.dumps(session.messages[0], ensure_ascii=False, separators=(",", ":"))
        view_from = bodies[0][0] if bodies else next_seq
    store.conversations.adopt_entries(
        agent_id,
        sid,
        KIND,
        started_at=session.started_at,
        last_activity_at=session.last_activity_at,
        first_seq=first_seq,
        next_seq=next_seq,
        view_from=view_from,
        summary=summary,
        bodies=bodies,
        details=dict(session.extra) or None,
    )


def session_text(session: Session) -> str:
    """The session as its checkpoint file holds it (Markus JSON)."""
    doc = fmt.SessionDoc(
        session.id,
        session.agent_id,
        list(session.messages),
        iso_ms(session.started_at),
        iso_ms(session.last_activity_at),
        compacted=session.compacted,
        first_seq=session.first_seq,
        extra=dict(session.extra),
    )
    return fmt.render_session(doc)


def session_from_text(text: str) -> Session:
    """The session a checkpoint file's text holds; ValueError if it is not one."""
    return session_of(fmt.parse_session(text))
