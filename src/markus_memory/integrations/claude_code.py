"""Claude Code: hooks that record every session once and bring the agent's memory into the
next one, and their installation.

- ``markus-memory hook session-start`` reads the SessionStart hook's JSON on stdin and answers
  with the memory context, and the observations saved lately, as its ``additionalContext``.
- ``markus-memory hook pre-compact`` / ``stop`` / ``session-end`` read the transcript JSONL the
  hook names and record in the agent's sessions the lines not recorded yet (``_claude_lines``:
  known by ``uuid`` against what the store holds, too large ones shortened, unreadable ones
  skipped with a problem), so what was said stays recallable however the session ends; with a
  chat model configured ``pre-compact`` then runs the memory flush over it.
- ``markus-memory install claude-code`` (``_claude_install``) writes the hooks and the MCP
  server where Claude Code keeps a person's own settings, never into committed files.

Every check is made before the first write: input that is not a hook's JSON, or names no
readable transcript file, changes nothing.

:class:`MarkusSessionStore` is a Claude Agent SDK ``SessionStore`` (duck-typed, as the SDK
allows) over the same recording: transcript lines kept verbatim in the agent's sessions.
Nothing here imports a framework; the CLI commands live in ``cli/_hooks.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..flush import FlushReport, memory_flush
from ..prompt import render_memory_context
from ._claude_install import SERVER_NAME, ClaudePaths, InstallReport, install_claude_code
from ._claude_lines import Transcript, read_lines, record_lines
from ._claude_transcripts import (
    META_KEY,
    entries_of,
    record_entries,
    scope_prefix,
    session_id_for,
)

if TYPE_CHECKING:
    from ..llm import ChatModel
    from ..memory import AgentMemory

RECORDING_EVENTS = ("PreCompact", "Stop", "SessionEnd")
RECENT_OBSERVATIONS = 20
"""How many of the newest observations the SessionStart context shows."""
OBSERVATION_CHARS = 400
"""Each shown observation is cut to this many characters."""
OBSERVATIONS_HEADING = "## Recent Observations"


# -- the hooks ------------------------------------------------------------------------------


def parse_hook_input(text: str, event: str) -> dict[str, Any]:
    """The hook's JSON object; InvalidInputError (with what was wrong) for anything else."""
    try:
        value = json.loads(text) if text.strip() else {}
    except (json.JSONDecodeError, RecursionError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
        raise InvalidInputError(f"the {event} hook input is not JSON: {detail}") from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"the {event} hook input must be a JSON object")
    named = value.get("hook_event_name")
    if named is not None and named != event:
        raise InvalidInputError(f"this is the {event} hook, but the input is for {named!r}")
    return value


def session_start(
    memory: AgentMemory, hook: Mapping[str, Any], profile: str = "default"
) -> dict[str, Any]:
    """The SessionStart hook's answer: the memory context and the newest observations (the
    ones the model saved with ``memory_save``, which the context itself leaves out)."""
    context = render_memory_context(memory, profile).text
    blocks = [block for block in (context, recent_observations(memory)) if block]
    return {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "\n\n".join(blocks),
        }
    }


def recent_observations(memory: AgentMemory) -> str:
    """The ``## Recent Observations`` block: the newest :data:`RECENT_OBSERVATIONS`, oldest
    first, each cut to :data:`OBSERVATION_CHARS`; '' when there are none."""
    found = memory.knowledge.observations(limit=RECENT_OBSERVATIONS)
    if not found:
        return ""
    lines = [
        OBSERVATIONS_HEADING,
        "What you saved with memory_save lately (memory_search finds the rest):",
    ]
    for obs in found:
        text = " ".join(obs.content.split())
        if len(text) > OBSERVATION_CHARS:
            text = text[: OBSERVATION_CHARS - 1] + "…"
        lines.append(f"- [{obs.timestamp.date().isoformat()}] ({obs.type}) {text}")
    return "\n".join(lines)


@dataclass(frozen=True)
class TranscriptHook:
    """A recording hook's input, checked, with the transcript already read."""

    event: str
    session_id: str
    transcript: Transcript


def read_hook(hook: Mapping[str, Any], event: str) -> TranscriptHook:
    """Check a PreCompact, Stop or SessionEnd hook's input and read the transcript it names;
    InvalidInputError for a missing field or a transcript that is not a readable file."""
    path, claude_id = hook.get("transcript_path"), hook.get("session_id")
    if not isinstance(path, str) or not path:
        raise InvalidInputError(f"the {event} hook input has no transcript_path")
    if not isinstance(claude_id, str) or not claude_id:
        raise InvalidInputError(f"the {event} hook input has no session_id")
    transcript = Path(os.path.expanduser(path))
    if not transcript.is_file():
        raise InvalidInputError(f"the transcript {transcript} does not exist or is not a file")
    cwd = hook.get("cwd")
    sid = session_id_for(cwd if isinstance(cwd, str) else "", claude_id)
    try:
        lines = read_lines(transcript)
    except OSError as exc:
        raise InvalidInputError(f"the transcript {transcript} cannot be read: {exc}") from None
    return TranscriptHook(event, sid, lines)


@dataclass(frozen=True)
class RecordReport:
    session_id: str
    recorded: int
    total: int
    shortened: int
    problems: tuple[str, ...]
    flush: FlushReport | None


def record_transcript(
    memory: AgentMemory, given: TranscriptHook, model: ChatModel | None = None
) -> RecordReport:
    """Record the lines of ``given`` the session has not recorded; flush with ``model``."""
    done = record_lines(memory, given.session_id, given.transcript)
    report = memory_flush(memory, model, given.session_id) if model is not None else None
    total = len(given.transcript.lines) + len(given.transcript.problems)
    return RecordReport(
        given.session_id, done.appended, total, done.shortened, done.problems, report
    )


def pre_compact(
    memory: AgentMemory, hook: Mapping[str, Any], model: ChatModel | None = None
) -> RecordReport:
    """Record the transcript the PreCompact hook names; flush with ``model`` if given."""
    return record_transcript(memory, read_hook(hook, "PreCompact"), model)


# -- the Claude Agent SDK session store -----------------------------------------------------


class MarkusSessionStore:
    """A Claude Agent SDK ``SessionStore`` over the agent's sessions.

    Pass it as ``ClaudeAgentOptions(session_store=MarkusSessionStore(memory))``: transcript
    lines are kept verbatim (a line's ``uuid`` is its idempotency key) and their text feeds
    ``recall_conversation``. Implements ``append``, ``load``, ``list_sessions``,
    ``list_subkeys`` and ``delete``: deleting a session (with its subagent transcripts, or one
    subpath alone) removes its lines from the session files, recall, its index and its
    vectors. Any non-empty session id and subpath are accepted (mapped to the agent's session
    id by :func:`session_id_for`; the key is kept as given). A session longer than the agent's
    compaction trigger keeps its newest lines only, like every session of the agent.
    """

    def __init__(self, memory: AgentMemory) -> None:
        self.memory = memory

    async def append(self, key: Mapping[str, Any], entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        sid = self._sid(key)
        marked = [dict(e) for e in entries]
        await asyncio.to_thread(self._append, sid, key, marked)

    def _append(self, sid: str, key: Mapping[str, Any], entries: list[dict[str, Any]]) -> None:
        with self.memory.lock:
            if self.memory.sessions.get(sid) is None:
                self.memory.sessions.get_or_create(sid)
                self.memory.sessions.append(sid, _key_message(key))
            record_entries(self.memory, sid, entries)

    async def load(self, key: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        def load() -> list[dict[str, Any]] | None:
            session = self.memory.sessions.get(self._sid(key))
            return None if session is None else entries_of(session.messages)

        return await asyncio.to_thread(load)

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        def listing() -> list[dict[str, Any]]:
            prefix = scope_prefix(project_key)
            found = []
            for info in self.memory.sessions.list():
                key = self._key_of(info.id) if info.id.startswith(prefix) else None
                if (
                    key is not None
                    and key.get("project_key") == project_key
                    and not key.get("subpath")
                ):
                    mtime = int(info.last_activity_at.timestamp() * 1000)
                    found.append({"session_id": key["session_id"], "mtime": mtime})
            return found

        return await asyncio.to_thread(listing)

    async def list_subkeys(self, key: Mapping[str, Any]) -> list[str]:
        return await asyncio.to_thread(self._subkeys, key)

    def _subkeys(self, key: Mapping[str, Any]) -> list[str]:
        prefix = scope_prefix(str(key["project_key"]))
        found = []
        for info in self.memory.sessions.list():
            if not info.id.startswith(prefix):
                continue
            stored = self._key_of(info.id)
            if (
                stored is not None
                and stored.get("subpath")
                and stored.get("project_key") == key["project_key"]
                and stored.get("session_id") == key["session_id"]
            ):
                found.append(str(stored["subpath"]))
        return sorted(found)

    async def delete(self, key: Mapping[str, Any]) -> None:
        def delete() -> None:
            with self.memory.lock:
                sids = [self._sid(key)]
                if not key.get("subpath"):
                    sids += [self._sid({**key, "subpath": sub}) for sub in self._subkeys(key)]
                for sid in sids:
                    self.memory.delete_session(sid)

        await asyncio.to_thread(delete)

    def _sid(self, key: Mapping[str, Any]) -> str:
        project = key.get("project_key")
        if not isinstance(project, str):
            raise InvalidInputError("a session key needs a string project_key")
        return session_id_for(project, str(key.get("session_id")), key.get("subpath") or None)

    def _key_of(self, sid: str) -> dict[str, Any] | None:
        session = self.memory.sessions.get(sid)
        if session is None or not session.messages:
            return None
        meta = session.messages[0].get("metadata")
        data = meta.get(META_KEY) if isinstance(meta, Mapping) else None
        key = data.get("key") if isinstance(data, Mapping) else None
        return dict(key) if isinstance(key, Mapping) else None


def _key_message(key: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "system", "content": "", "metadata": {META_KEY: {"key": dict(key)}}}


__all__ = [
    "RECORDING_EVENTS",
    "SERVER_NAME",
    "ClaudePaths",
    "InstallReport",
    "MarkusSessionStore",
    "RecordReport",
    "TranscriptHook",
    "install_claude_code",
    "parse_hook_input",
    "pre_compact",
    "read_hook",
    "record_entries",
    "record_transcript",
    "recent_observations",
    "session_id_for",
    "session_start",
]
