"""Load a LongMemEval-format file (JSON, or gzipped JSON) into questions (no project imports).

Each item holds its own haystack: sessions of ``{role, content, has_answer?}`` turns with a
date each. A turn's id is ``<session id>#<position>``; the evidence is the turns marked
``has_answer``. Questions whose id ends in ``_abs`` (abstention) and those without evidence
are not scored (the official retrieval metrics' rule).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Turn:
    session_id: str
    position: int
    role: str
    text: str
    date: datetime

    @property
    def id(self) -> str:
        return f"{self.session_id}#{self.position}"


@dataclass(frozen=True)
class Question:
    question_id: str
    question_type: str
    question: str
    date: datetime
    turns: tuple[Turn, ...]
    evidence: frozenset[str]
    answer_sessions: frozenset[str]


def parse_date(text: str) -> datetime:
    """``"2023/07/15 (Sat) 04:55"`` -> an aware UTC datetime."""
    day, _, clock = text.split(" ")
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def _question(item: dict[str, Any]) -> Question:
    sessions = sorted(
        zip(
            (parse_date(d) for d in item["haystack_dates"]),
            item["haystack_session_ids"],
            item["haystack_sessions"],
            strict=True,
        ),
        key=lambda row: row[0],
    )
    turns: list[Turn] = []
    evidence: set[str] = set()
    for date, session_id, session in sessions:
        for position, raw in enumerate(session):
            turn = Turn(str(session_id), position, raw["role"], raw["content"], date)
            turns.append(turn)
            if raw.get("has_answer"):
                evidence.add(turn.id)
    return Question(
        str(item["question_id"]),
        str(item["question_type"]),
        str(item["question"]),
        parse_date(item["question_date"]),
        tuple(turns),
        frozenset(evidence),
        frozenset(str(s) for s in item["answer_session_ids"]),
    )


def load(path: Path) -> list[Question]:
    """Every question of the file, in file order (scored or not: see :func:`scored`)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return [_question(item) for item in json.loads(raw)]


def scored(question: Question) -> bool:
    return bool(question.evidence) and not question.question_id.endswith("_abs")
