"""Load a LoCoMo-format JSON file into conversations, turns and questions (no project imports)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class LocomoTurn:
    session: int
    position: int
    speaker: str
    dia_id: str
    text: str
    caption: str | None
    date: datetime


@dataclass(frozen=True)
class LocomoQuestion:
    question: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class LocomoConversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[LocomoTurn, ...]
    questions: tuple[LocomoQuestion, ...]


def parse_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def _evidence(raw: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for item in raw:
        out.extend(part for part in re.split(r"[;,\s]+", item) if re.fullmatch(r"D\d+:\d+", part))
    return tuple(dict.fromkeys(out))


def load(path: Path) -> list[LocomoConversation]:
    conversations = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        numbers = sorted(
            int(key.split("_")[1])
            for key, value in conv.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
        )
        turns = []
        for number in numbers:
            date = parse_date(conv[f"session_{number}_date_time"])
            for position, turn in enumerate(conv[f"session_{number}"]):
                turns.append(
                    LocomoTurn(
                        number,
                        position,
                        turn["speaker"],
                        turn["dia_id"],
                        turn["text"],
                        turn.get("blip_caption"),
                        date,
                    )
                )
        questions = tuple(
            LocomoQuestion(qa["question"], _evidence(qa.get("evidence", [])), int(qa["category"]))
            for qa in sample["qa"]
            if int(qa["category"]) in CATEGORIES
        )
        conversations.append(
            LocomoConversation(
                sample["sample_id"], (conv["speaker_a"], conv["speaker_b"]), tuple(turns), questions
            )
        )
    return conversations


class ReplayClock:
    """An agent's clock, set to each turn's date while a conversation is recorded."""

    def __init__(self) -> None:
        self.now = datetime.now().astimezone()

    def __call__(self) -> datetime:
        return self.now


def record(mem: Any, conv: LocomoConversation, clock: ReplayClock) -> None:
    """Append every turn of ``conv`` to the agent ``mem`` (an ``AgentMemory`` whose clock is
    ``clock``) as its speakers said it, at the turn's time: the first speaker as the user, one
    session per LoCoMo session, the turn's id and speaker in the metadata."""
    for turn in conv.turns:
        clock.now = turn.date
        sid = f"session_{turn.session}"
        if turn.position == 0:
            mem.sessions.get_or_create(sid)
        role = "user" if turn.speaker == conv.speakers[0] else "assistant"
        metadata = {"dia_id": turn.dia_id, "speaker": turn.speaker}
        mem.sessions.append(sid, {"role": role, "content": turn.text, "metadata": metadata})
