"""Storage compaction of a loaded session, as the original: old oversized tool results shrunk,
and all but the newest messages replaced by one summary (seqs kept); and the frozen snapshot of
a loaded session."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from ...config import Limits, parse_iso
from . import _format as fmt
from . import _messages as msg
from ._files import SessionFiles
from ._records import BeforeCompact, CompactResult, Session

log = logging.getLogger(__name__)


def shrink_old(live: SessionFiles, limits: Limits) -> None:
    """Shrink oversized tool results that have just left the recent window, as the original.

    Only messages not checked before are looked at, so each append does O(1) work.
    """
    messages = live.doc.messages
    boundary = len(messages) - min(limits.session_compact_keep, len(messages))
    for i in range(live.shrink_checked, boundary):
        shrunk = msg.shrink_if_oversized(messages[i], limits.session_tool_shrink_chars)
        if shrunk is not None:
            messages[i] = shrunk
            live.dirty = True
    live.shrink_checked = max(live.shrink_checked, boundary)


def compact(
    live: SessionFiles, keep_last: int, limits: Limits, before_compact: BeforeCompact | None
) -> CompactResult:
    """Replace all but the last ``keep_last`` messages by a summary and checkpoint, once
    ``before_compact`` lets the older ones leave the file."""
    messages = live.doc.messages
    keep_last = max(keep_last, 0)
    if len(messages) <= keep_last:
        return CompactResult("", 0)
    if not _may_drop(live, len(messages) - keep_last, before_compact):
        return CompactResult("", 0)
    older = messages[: len(messages) - keep_last]
    kept = messages[len(messages) - keep_last :]
    summary = msg.heuristic_summary(older)
    before = (live.doc.compacted, live.doc.messages, live.shrink_checked, live.dirty)
    # Every message of ``older`` but a previous summary leaves the file for good: counting
    # them keeps the seq of the kept messages (and of later appends) unchanged.
    live.doc.compacted += len(older) - (1 if live.doc.compacted > 0 else 0)
    live.doc.messages = [msg.summary_message(len(older), len(kept), summary), *kept]
    live.shrink_checked = 0
    try:
        shrink_old(live, limits)
        live.checkpoint()
    except BaseException:
        # The files still hold the uncompacted session (disk full …): so must our copy, or the
        # next append would number its journal record after the compacted copy.
        live.doc.compacted, live.doc.messages, live.shrink_checked, live.dirty = before
        raise
    return CompactResult(summary, len(older))


def _may_drop(live: SessionFiles, keep_from: int, before_compact: BeforeCompact | None) -> bool:
    """Whether ``before_compact`` lets the messages before index ``keep_from`` leave."""
    if before_compact is None:
        return True
    keep_from_seq = live.doc.seq(keep_from)
    assert keep_from_seq is not None  # index 0 is never kept by a compaction that drops
    try:
        if before_compact(live.doc.id, keep_from_seq):
            return True
    except Exception:
        log.exception("before_compact failed for %s", live.doc.id)
    log.warning("compaction of %s deferred: its old messages are not safe yet", live.doc.id)
    return False


def snapshot(live: SessionFiles) -> Session:
    """The frozen :class:`Session` of a loaded session."""
    return session_of(live.doc)


def session_of(doc: fmt.SessionDoc) -> Session:
    """The frozen :class:`Session` a parsed session file holds."""
    return Session(
        id=doc.id,
        agent_id=doc.agent_id,
        messages=tuple(doc.messages),
        started_at=_when(doc.started_at),
        last_activity_at=_when(doc.last_activity_at),
        compacted=doc.compacted,
        first_seq=doc.first_seq,
        extra=dict(doc.extra),
    )


def _when(stamp: str) -> datetime:
    moment = parse_iso(stamp)
    if moment is None:
        return datetime.fromtimestamp(0, tz=timezone.utc)
    return moment
