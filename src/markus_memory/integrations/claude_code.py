"""Claude Code: hooks that bring the agent's memory into a session, and their installation.

- ``markus-memory hook session-start`` reads the SessionStart hook's JSON on stdin and answers
  with the memory context as the hook's ``additionalContext``.
- ``markus-memory hook pre-compact`` reads the transcript JSONL the PreCompact hook names and
  records it in the agent's sessions (each line once: its ``uuid`` is the idempotency key), so
  what was said stays recallable after Claude compacts; with a chat model configured it then
  runs the memory flush over it.
- ``markus-memory install claude-code`` adds the MCP server to ``.mcp.json`` and both hooks to
  ``.claude/settings.json``, keeping everything else and changing nothing on a second run.

:class:`MarkusSessionStore` (the Claude Agent SDK ``SessionStore``, kept in the agent's
histories) lives in :mod:`~markus_memory.integrations.claude_agent_sdk` and is importable from
here too. Nothing here imports a framework; the CLI commands live in ``cli/_hooks.py``.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..flush import FlushReport, memory_flush
from ..prompt import render_memory_context
from ._claude_transcripts import read_transcript, record_entries, session_id_for
from .claude_agent_sdk import MarkusSessionStore

if TYPE_CHECKING:
    from ..llm import ChatModel
    from ..memory import AgentMemory

SERVER_NAME = "markus-memory"


# -- the hooks ------------------------------------------------------------------------------


def parse_hook_input(text: str, event: str) -> dict[str, Any]:
    """The hook's JSON object; InvalidInputError (with what was wrong) for anything else."""
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"the {event} hook input is not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"the {event} hook input must be a JSON object")
    named = value.get("hook_event_name")
    if named is not None and named != event:
        raise InvalidInputError(f"this is the {event} hook, but the input is for {named!r}")
    return value


def session_start(
    memory: AgentMemory, hook: Mapping[str, Any], profile: str = "default"
) -> dict[str, Any]:
    """The SessionStart hook's answer: the memory context as additional context."""
    context = render_memory_context(memory, profile)
    return {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context.text,
        }
    }


@dataclass(frozen=True)
class PreCompactReport:
    session_id: str
    recorded: int
    total: int
    flush: FlushReport | None


def pre_compact(
    memory: AgentMemory, hook: Mapping[str, Any], model: ChatModel | None = None
) -> PreCompactReport:
    """Record the transcript the PreCompact hook names; flush with ``model`` if given."""
    path, claude_id = hook.get("transcript_path"), hook.get("session_id")
    if not isinstance(path, str) or not path:
        raise InvalidInputError("the PreCompact hook input has no transcript_path")
    if not isinstance(claude_id, str) or not claude_id:
        raise InvalidInputError("the PreCompact hook input has no session_id")
    transcript = Path(os.path.expanduser(path))
    if not transcript.is_file():
        raise InvalidInputError(f"the transcript {transcript} does not exist")
    entries = read_transcript(transcript)
    cwd = hook.get("cwd")
    sid = session_id_for(cwd if isinstance(cwd, str) else "", claude_id)
    recorded = record_entries(memory, sid, entries, whole_file=True)
    report = None
    if model is not None:
        report = memory_flush(memory, model, sid)
    return PreCompactReport(sid, recorded, len(entries), report)


# -- installation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InstallReport:
    changed: tuple[Path, ...]
    unchanged: tuple[Path, ...]


def install_claude_code(
    project: Path, *, command: Sequence[str], agent: str, home: Path | None = None
) -> InstallReport:
    """Add the MCP server to ``.mcp.json`` and the hooks to ``.claude/settings.json``.

    ``command`` is how to run ``markus-memory`` (e.g. ``["markus-memory"]``). Entries this
    function wrote before are updated in place, everything else is kept; a file that is not a
    JSON object is refused (InvalidInputError) before either file is written.
    """
    base = [*command, *(["--home", str(home)] if home is not None else [])]
    mcp_path = project / ".mcp.json"
    settings_path = project / ".claude" / "settings.json"
    mcp, settings = _load_object(mcp_path), _load_object(settings_path)
    new_mcp = _with_server(mcp, base, agent)
    new_settings = _with_hooks(settings, base, agent)
    changed, unchanged = [], []
    for path, old, new in ((mcp_path, mcp, new_mcp), (settings_path, settings, new_settings)):
        if old == new and path.exists():
            unchanged.append(path)
            continue
        _write_json(path, new)
        changed.append(path)
    return InstallReport(tuple(changed), tuple(unchanged))


def _load_object(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"{path} must hold a JSON object; fix it first")
    return value


def _with_server(config: dict[str, Any], base: Sequence[str], agent: str) -> dict[str, Any]:
    servers = config.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInputError(".mcp.json: mcpServers must be an object")
    server = {"type": "stdio", "command": base[0], "args": [*base[1:], "serve", "--agent", agent]}
    return {**config, "mcpServers": {**servers, SERVER_NAME: server}}


def _with_hooks(settings: dict[str, Any], base: Sequence[str], agent: str) -> dict[str, Any]:
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError(".claude/settings.json: hooks must be an object")
    hooks = dict(hooks)
    for event, name in (("SessionStart", "session-start"), ("PreCompact", "pre-compact")):
        command = shlex.join([*base, "hook", name, "--agent", agent])
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise InvalidInputError(f".claude/settings.json: hooks.{event} must be a list")
        hooks[event] = _with_command(groups, command, f" hook {name}")
    return {**settings, "hooks": hooks}


def _with_command(groups: list[Any], command: str, marker: str) -> list[Any]:
    """``groups`` with our hook command, replacing the one a previous install wrote."""
    out, placed = [], False
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list):
            out.append(group)
            continue
        kept = []
        for hook in inner:
            ours = isinstance(hook, dict) and _is_ours(hook.get("command"), marker)
            if ours and not placed:
                kept.append({**hook, "type": "command", "command": command})
                placed = True
            elif not ours:
                kept.append(hook)
        if kept:
            out.append({**group, "hooks": kept})
    if not placed:
        out.append({"hooks": [{"type": "command", "command": command}]})
    return out


def _is_ours(command: object, marker: str) -> bool:
    return isinstance(command, str) and "markus-memory" in command and marker in command


def _write_json(path: Path, value: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = [
    "InstallReport",
    "MarkusSessionStore",
    "PreCompactReport",
    "install_claude_code",
    "parse_hook_input",
    "pre_compact",
    "read_transcript",
    "record_entries",
    "session_id_for",
    "session_start",
]
