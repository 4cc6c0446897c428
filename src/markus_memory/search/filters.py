"""Search filters on transcript turns (session, role or speaker, time), as SQL and in Python."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config import epoch_ms

if TYPE_CHECKING:
    from .conversation import Turn


def sql_filters(
    session_id: str | None, role: str | None, since: datetime | None, until: datetime | None
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if session_id is not None:
        clauses.append("t.session = ?")
        params.append(session_id)
    if role is not None:
        clauses.append("(lower(t.role) = ? OR t.speaker = ?)")
        params.extend([role.lower(), role.lower()])
    if since is not None:
        clauses.append("t.ts >= ?")
        params.append(epoch_ms(since))
    if until is not None:
        clauses.append("t.ts <= ?")
        params.append(epoch_ms(until))
    return " AND ".join(clauses), params


class TurnFilter:
    """The search filters as a predicate on row ids (the same test as the SQL in _filters)."""

    def __init__(
        self,
        session_id: str | None,
        role: str | None,
        since: datetime | None,
        until: datetime | None,
        turns: Mapping[int, Turn],
    ) -> None:
        self._session_id = session_id
        self._role = role.lower() if role is not None else None
        self._since = epoch_ms(since) if since is not None else None
        self._until = epoch_ms(until) if until is not None else None
        self._turns = turns

    def __call__(self, rowid: int) -> bool:
        turn = self._turns[rowid]
        if self._session_id is not None and turn.session_id != self._session_id:
            return False
        if self._role is not None and self._role not in (
            turn.role.lower(),
            (turn.speaker or turn.role).lower(),
        ):
            return False
        if self._since is not None or self._until is not None:
            if turn.timestamp is None:
                return False
            stamp = epoch_ms(turn.timestamp)
            if self._since is not None and stamp < self._since:
                return False
            if self._until is not None and stamp > self._until:
                return False
        return True
