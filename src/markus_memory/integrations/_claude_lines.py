"""A Claude Code transcript file recorded by the hooks: every line once, a bad line never in
the way of the others.

Each hook run reads the whole JSONL file and appends the lines the session has not recorded
yet. A line is known by its ``uuid`` (a line without one, such as a ``summary``, by the hash of
its content) and the check is made against what the store holds for the session
(:func:`recorded_identities`): the store keeps every message ever appended, while the session
file compacts past its trigger. A line too large for a session message is stored shortened,
with a marker that says so and how long it was; a line that cannot be kept (not JSON, ``NaN``,
not an object, nested deeper than :data:`MAX_DEPTH`, a lone surrogate) is skipped with a
problem for the caller to report, and the lines after it are recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ._claude_transcripts import META_KEY, line_message

if TYPE_CHECKING:
    from ..memory import AgentMemory

MAX_DEPTH = 100
"""The deepest nesting of a line kept (Claude Code's own lines stay far below it)."""
_FLOOR = 1000  # the shortest a long string of a shortened line is cut to, in characters
_COMPACT = (",", ":")


@dataclass(frozen=True)
class Line:
    """One transcript line that parsed: its number, the object, its identity and JSON size."""

    number: int
    entry: dict[str, Any]
    identity: str
    size: int


@dataclass(frozen=True)
class Transcript:
    """The lines of a transcript file that parsed, and why the others were skipped."""

    lines: tuple[Line, ...]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class Recorded:
    appended: int
    shortened: int
    problems: tuple[str, ...]


def read_lines(path: Path) -> Transcript:
    """The lines of a transcript JSONL file. A last line that does not parse may be one being
    written: it is left for the next run, without a problem."""
    lines, problems = [], []
    pending = None  # the problem of the line before, reported once a line follows it
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            if pending is not None:
                problems.append(pending)
                pending = None
            try:
                entry, size = _parse(text)
            except ValueError as exc:
                pending = f"line {number} skipped: {exc}"
                continue
            lines.append(Line(number, entry, identity_of(entry), size))
    return Transcript(tuple(lines), tuple(problems))


def _parse(text: str) -> tuple[dict[str, Any], int]:
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(value, dict):
        raise ValueError(f"a JSON {type(value).__name__}, not an object")
    if _depth(value) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        size = len(json.dumps(value, ensure_ascii=False, separators=_COMPACT).encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("its text holds a lone surrogate, which is not valid Unicode") from None
    return value, size


def _no_constant(name: str) -> Any:
    raise ValueError(f"holds {name}, which JSON does not allow")


def _depth(value: object) -> int:
    """How deep ``value`` nests, counted up to one past :data:`MAX_DEPTH`."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


def identity_of(entry: Mapping[str, Any]) -> str:
    """``uuid:<uuid>``, or for a line without one ``line:<hash of its content>``."""
    uuid = entry.get("uuid")
    if isinstance(uuid, str):
        return "uuid:" + uuid
    canonical = json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=_COMPACT)
    return "line:" + hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()


def recorded_identities(memory: AgentMemory, sid: str) -> set[str]:
    """The identity of every line session ``sid`` ever recorded: what the store holds (every
    message appended, compacted or not), with the session file's lines for any append the
    store has not received yet. Reads the identities, not the messages."""
    read = memory.store.transcripts.transcript_metadata_strings
    held = {"uuid:" + u for u in read(memory.agent_id, sid, (META_KEY, "entry", "uuid"))}
    held.update(read(memory.agent_id, sid, (META_KEY, "line")))
    session = memory.sessions.get(sid)
    for message in session.messages if session is not None else []:
        meta = message.get("metadata")
        data = meta.get(META_KEY) if isinstance(meta, Mapping) else None
        entry = data.get("entry") if isinstance(data, Mapping) else None
        if isinstance(entry, Mapping) and isinstance(entry.get("uuid"), str):
            held.add("uuid:" + entry["uuid"])
        elif isinstance(data, Mapping) and isinstance(data.get("line"), str):
            held.add(data["line"])
    return held


def record_lines(memory: AgentMemory, sid: str, transcript: Transcript) -> Recorded:
    """Append to session ``sid`` the lines it has not recorded, shortened where too large;
    a line the session cannot hold is a problem, and the others are still appended."""
    cap = memory.settings.limits.session_message_max_bytes
    problems = list(transcript.problems)
    with memory.lock:
        seen = recorded_identities(memory, sid)
        fresh, shortened = [], 0
        for line in transcript.lines:
            if line.identity in seen:
                continue
            seen.add(line.identity)
            message, cut = _fitted(line, cap * 3 // 4)
            try:
                memory.sessions.check_message(message)
            except InvalidInputError as exc:
                problems.append(f"line {line.number} skipped: {exc}")
                continue
            fresh.append(message)
            shortened += cut
        if fresh:
            memory.sessions.get_or_create(sid)
            for message in fresh:
                memory.sessions.append(sid, message)
    return Recorded(len(fresh), shortened, tuple(problems))


def _fitted(line: Line, budget: int) -> tuple[dict[str, Any], bool]:
    """The session message of ``line``, its long strings cut until it fits ``budget`` bytes
    (the line's scalar fields alone if even that does not fit); whether it was cut."""
    message = _keyed(line_message(line.entry), line, cut=False)
    if _size(message) <= budget:
        return message, False
    limit = budget // 8
    while limit >= _FLOOR:
        message = _keyed(line_message(_cut(line.entry, limit)), line, cut=True)
        if _size(message) <= budget:
            return message, True
        limit //= 2
    scalars = {k: _cut(v, _FLOOR) for k, v in line.entry.items() if not isinstance(v, dict | list)}
    return _keyed(line_message(scalars), line, cut=True), True


def _keyed(message: dict[str, Any], line: Line, *, cut: bool) -> dict[str, Any]:
    """``message`` marked with the line's identity (a line without a uuid) and, when it was
    shortened, the size of the line as written."""
    data = message["metadata"][META_KEY]
    if not line.identity.startswith("uuid:"):
        data["line"] = line.identity
    if cut:
        data["shortened_from_bytes"] = line.size
    return message


def _cut(value: Any, limit: int) -> Any:
    """``value`` with every string longer than ``limit`` characters cut there and marked."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}\n[shortened by markus-memory: {len(value):,} characters in all]"
    if isinstance(value, dict):
        return {k: _cut(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v, limit) for v in value]
    return value


def _size(message: Mapping[str, Any]) -> int:
    return len(json.dumps(message, ensure_ascii=False, separators=_COMPACT).encode("utf-8"))
