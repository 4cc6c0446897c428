"""Recall hits as passages: the windows of hits from one session that overlap or touch are
merged, so a short session's turns are shown once, not once per hit (the CLI and the UI)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from .recall import ContextTurn, ConversationHit


@dataclass(frozen=True)
class PassageTurn:
    """One turn of a passage; ``hit`` when recall ranked it itself."""

    index: int
    role: str
    speaker: str | None
    timestamp: datetime | None
    text: str
    hit: bool

    @property
    def who(self) -> str:
        return self.speaker or self.role


@dataclass(frozen=True)
class Passage:
    """Consecutive turns of one session around one or more hits, in session order.

    ``index``, ``timestamp`` and ``score`` are those of its best hit; passages come in the
    order of their best hits."""

    session_id: str
    index: int
    timestamp: datetime | None
    score: float
    turns: tuple[PassageTurn, ...]

    @property
    def hits(self) -> int:
        return sum(1 for t in self.turns if t.hit)


def _context(turn: ContextTurn) -> PassageTurn:
    return PassageTurn(turn.index, turn.role, turn.speaker, turn.timestamp, turn.text, False)


def _window(hit: ConversationHit) -> dict[int, PassageTurn]:
    own = PassageTurn(hit.index, hit.role, hit.speaker, hit.timestamp, hit.text, True)
    return {
        **{t.index: _context(t) for t in hit.before},
        hit.index: own,
        **{t.index: _context(t) for t in hit.after},
    }


def merge_hits(hits: Iterable[ConversationHit]) -> list[Passage]:
    """``hits`` (best first) as passages: a hit whose window overlaps or touches an earlier
    passage of its session joins it (its turns marked as hits there)."""
    groups: list[tuple[ConversationHit, dict[int, PassageTurn]]] = []
    for hit in hits:
        window = _window(hit)
        joined = [
            g
            for g in groups
            if g[0].session_id == hit.session_id
            and min(window) <= max(g[1]) + 1
            and min(g[1]) <= max(window) + 1
        ]
        if not joined:
            groups.append((hit, window))
            continue
        first, turns = joined[0]
        for other in joined[1:]:  # a window that bridges two passages joins them
            _absorb(turns, other[1])
            groups.remove(other)
        _absorb(turns, window)
    return [
        Passage(
            best.session_id,
            best.index,
            best.timestamp,
            best.score,
            tuple(turns[i] for i in sorted(turns)),
        )
        for best, turns in groups
    ]


def _absorb(into: dict[int, PassageTurn], window: dict[int, PassageTurn]) -> None:
    for index, turn in window.items():
        if index not in into or turn.hit:
            into[index] = turn
