"""What ``doctor`` reads without changing anything, and the repairs ``doctor --fix`` announces.

A check never writes: session files and journals are parsed from their bytes here rather than
loaded through the session store (which sets a damaged file aside as it loads it). A repair is
described in words before it runs, and what it did is reported after it ran.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from .._fs import atomic_write_bytes
from ..config import Settings
from ..errors import MarkusMemoryError
from ..layers.notebook import repair_utf8, utf8_damage
from ..layers.sessions import _format as fmt
from ..layers.sessions import _journal as journal
from ..layers.sessions._files import _hash as checkpoint_hash
from ..memory import open_agent


@dataclass(frozen=True)
class SessionProblem:
    """A session whose files the store would set aside (wholly or in part) when loading it."""

    session_id: str
    file: str
    why: str


def session_problems(directory: Path) -> tuple[int, list[SessionProblem]]:
    """How many sessions ``directory`` holds and which of them are damaged; reads only."""
    if not directory.is_dir():
        return 0, []
    problems: list[SessionProblem] = []
    count = 0
    for path in sorted(directory.glob("*.json")):
        if path.name.startswith("."):
            continue
        count += 1
        sid = fmt.id_from_file_stem(path.stem)
        why = _checkpoint_problem(path, sid)
        if why is not None:
            problems.append(SessionProblem(sid, path.name, why))
            continue
        journal = path.with_suffix(".jsonl")
        why = _journal_problem(journal, sid, checkpoint_hash(path.read_bytes()))
        if why is not None:
            problems.append(SessionProblem(sid, journal.name, why))
    return count, problems


def _checkpoint_problem(path: Path, sid: str) -> str | None:
    try:
        doc = fmt.parse_session(path.read_bytes().decode("utf-8-sig"))
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
        return f"not a session file ({exc})"
    if doc.id != sid:
        return f"holds session {doc.id!r}, expected {sid!r}"
    return None


def _journal_problem(path: Path, sid: str, base: str) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    lines, _ = journal.split_lines(data)
    header = journal.parse_journal_header(lines[0]) if lines else None
    if lines and header is None:
        return "its header line is damaged"
    if header != (sid, base):
        return None  # absorbed by a later checkpoint: the store drops it, nothing is lost
    for number, line in enumerate(lines[1:], start=2):
        try:
            journal.parse_journal_record(line)
        except ValueError as exc:
            return f"line {number} is damaged ({exc})"
    return None


def session_repair(problem: SessionProblem) -> str:
    """What ``--fix`` does to a damaged session, in words."""
    return (
        f"load session {problem.session_id!r} once, as the store does: the damaged "
        f"sessions/{problem.file} (or the damaged part of it) is moved aside to "
        f"{problem.file}.corrupt-<time>, nothing is deleted"
    )


def repair_session(settings: Settings, agent: str, session_id: str) -> str:
    """Load ``session_id`` through the store (which sets damage aside); what changed on disk."""
    directory = settings.agent_dir(agent) / "sessions"
    before = _listing(directory)
    with open_agent(agent, settings=settings) as mem:
        try:
            mem.sessions.get(session_id)
        except MarkusMemoryError:  # a damaged file is reported after it was set aside
            pass
    after = _listing(directory)
    gone = sorted(set(before) - set(after))
    new = sorted(set(after) - set(before))
    changed = sorted(n for n in set(before) & set(after) if before[n] != after[n])
    parts = [f"moved aside: {', '.join(new)}" if new else ""]
    parts.append(f"no longer present: {', '.join(gone)}" if gone else "")
    parts.append(f"rewritten: {', '.join(changed)}" if changed else "")
    return "; ".join(p for p in parts if p) or "nothing needed changing"


def _listing(directory: Path) -> dict[str, tuple[int, int]]:
    if not directory.is_dir():
        return {}
    found = {}
    for entry in os.scandir(directory):
        if entry.is_file():
            stat = entry.stat()
            found[entry.name] = (stat.st_size, stat.st_mtime_ns)
    return found


def utf8_repair(path: Path) -> str:
    """What ``--fix`` does to a file with bytes that are not UTF-8, in words."""
    damage = utf8_damage(path.read_bytes())
    where = ", ".join(f"line {line} column {column}" for line, column, _ in damage[:5])
    more = f" and {len(damage) - 5} more" if len(damage) > 5 else ""
    return (
        f"replace the {len(damage)} invalid byte(s) of {path.name} ({where}{more}) with U+FFFD, "
        f"keeping every other byte; the original is kept as {path.name}.corrupt-<time>"
    )


def repair_utf8_file(path: Path) -> str:
    """Keep a copy of ``path``, then rewrite it with its invalid bytes replaced; what was done."""
    data = path.read_bytes()
    backup = path.with_name(f"{path.name}.corrupt-{time.time_ns() // 1_000_000}")
    atomic_write_bytes(backup, data)
    atomic_write_bytes(path, repair_utf8(data))
    return f"replaced {len(utf8_damage(data))} invalid byte(s); original kept as {backup.name}"
