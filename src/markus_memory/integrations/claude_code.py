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

:class:`MarkusSessionStore` (the Claude Agent SDK ``SessionStore``, kept in the agent's
histories) lives in :mod:`~markus_memory.integrations.claude_agent_sdk` and is importable from
here too. Nothing here imports a framework; the CLI commands live in ``cli/_hooks.py``.
"""

from __future__ import annotations

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
    record_entries,
    session_id_for,
)
from .claude_agent_sdk import MarkusSessionStore

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
