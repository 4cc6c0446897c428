"""``markus-memory install claude-code``: the hooks and the MCP server, written only where
Claude Code keeps a person's own settings.

The command Claude Code runs is this interpreter's absolute path (``python -m
markus_memory.cli``), which works outside the virtual environment but only on this machine,
so nothing goes into the files a project commits (``.claude/settings.json``, ``.mcp.json``):

- scope ``local`` (the default): the hooks in ``<project>/.claude/settings.local.json``, the
  MCP server under ``projects.<absolute project path>.mcpServers`` of ``~/.claude.json``
  (where ``claude mcp add --scope local`` puts it);
- scope ``user``: the hooks in ``~/.claude/settings.json``, the server in the top-level
  ``mcpServers`` of ``~/.claude.json`` (``claude mcp add --scope user``).

``CLAUDE_CONFIG_DIR`` moves both user files as it moves them for Claude Code. Entries an
earlier version wrote into the committed files are taken out of them. Everything else in
every file is kept; a second run changes nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import InvalidInputError

SERVER_NAME = "markus-memory"
Scope = Literal["local", "user"]
HOOKS = (
    ("SessionStart", "session-start"),
    ("PreCompact", "pre-compact"),
    ("Stop", "stop"),
    ("SessionEnd", "session-end"),
)


@dataclass(frozen=True)
class InstallReport:
    changed: tuple[Path, ...]
    unchanged: tuple[Path, ...]


@dataclass(frozen=True)
class ClaudePaths:
    """Where Claude Code reads its user settings and its own configuration file."""

    settings_dir: Path
    config: Path

    @classmethod
    def from_env(cls) -> ClaudePaths:
        moved = os.environ.get("CLAUDE_CONFIG_DIR")
        if moved:
            return cls(Path(moved), Path(moved) / ".claude.json")
        return cls(Path.home() / ".claude", Path.home() / ".claude.json")


def install_claude_code(
    project: Path,
    *,
    command: Sequence[str],
    agent: str,
    home: Path | None = None,
    scope: Scope = "local",
    mcp: bool = True,
    claude: ClaudePaths | None = None,
) -> InstallReport:
    """Add the four hooks and (with ``mcp``) the MCP server for ``scope``; see the module.

    ``command`` is how to run ``markus-memory``. Entries written before are updated in place;
    a file that is not a JSON object is refused (InvalidInputError) before any file is written.
    """
    where = claude if claude is not None else ClaudePaths.from_env()
    base = [*command, *(["--home", str(home)] if home is not None else [])]
    project = project.resolve()
    hooks_path = (
        project / ".claude" / "settings.local.json"
        if scope == "local"
        else where.settings_dir / "settings.json"
    )
    plans: list[tuple[Path, dict[str, Any], dict[str, Any]]] = []
    settings = _load_object(hooks_path)
    plans.append((hooks_path, settings, _with_hooks(settings, base, agent, hooks_path)))
    if mcp:
        config = _load_object(where.config)
        server = {
            "type": "stdio",
            "command": base[0],
            "args": [*base[1:], "serve", "--agent", agent],
        }
        plans.append((where.config, config, _with_server(config, server, scope, project)))
    for shared in (project / ".claude" / "settings.json", project / ".mcp.json"):
        if shared != hooks_path and shared.exists():
            old = _load_object(shared)
            plans.append((shared, old, _without_ours(old, shared)))
    changed, unchanged = [], []
    for path, old, new in plans:
        if old == new:  # our entries are there (the hooks and server are never empty)
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


def _with_server(
    config: dict[str, Any], server: dict[str, Any], scope: Scope, project: Path
) -> dict[str, Any]:
    if scope == "user":
        return {**config, "mcpServers": {**_servers(config), SERVER_NAME: server}}
    projects = config.get("projects", {})
    if not isinstance(projects, dict):
        raise InvalidInputError("~/.claude.json: projects must be an object")
    entry = projects.get(str(project), {})
    if not isinstance(entry, dict):
        raise InvalidInputError(f"~/.claude.json: projects[{str(project)!r}] must be an object")
    entry = {**entry, "mcpServers": {**_servers(entry), SERVER_NAME: server}}
    return {**config, "projects": {**projects, str(project): entry}}


def _servers(config: Mapping[str, Any]) -> dict[str, Any]:
    servers = config.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInputError("mcpServers must be an object")
    return servers


def _with_hooks(
    settings: dict[str, Any], base: Sequence[str], agent: str, path: Path
) -> dict[str, Any]:
    hooks = _hooks_of(settings, path)
    for event, name in HOOKS:
        command = shlex.join([*base, "hook", name, "--agent", agent])
        hooks[event] = _with_command(_groups(hooks, event, path), command, f" hook {name}")
    return {**settings, "hooks": hooks}


def _without_ours(config: dict[str, Any], path: Path) -> dict[str, Any]:
    """``config`` (a committed file) without the hooks and the server an earlier install put
    there."""
    out = dict(config)
    if "hooks" in config:
        hooks = _hooks_of(config, path)
        for event, name in HOOKS:
            if event in hooks:
                hooks[event] = _with_command(_groups(hooks, event, path), None, f" hook {name}")
                if not hooks[event]:
                    del hooks[event]
        out["hooks"] = hooks
    server = _servers(config).get(SERVER_NAME) if "mcpServers" in config else None
    if isinstance(server, dict) and "serve" in server.get("args", []):
        out["mcpServers"] = {k: v for k, v in config["mcpServers"].items() if k != SERVER_NAME}
    return out


def _hooks_of(settings: Mapping[str, Any], path: Path) -> dict[str, Any]:
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError(f"{path}: hooks must be an object")
    return dict(hooks)


def _groups(hooks: Mapping[str, Any], event: str, path: Path) -> list[Any]:
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise InvalidInputError(f"{path}: hooks.{event} must be a list")
    return groups


def _with_command(groups: list[Any], command: str | None, marker: str) -> list[Any]:
    """``groups`` with our hook command in place of the one a previous install wrote (the
    first of them; any other is dropped); ``command=None`` drops ours."""
    out, placed = [], command is None
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
    return (
        isinstance(command, str)
        and ("markus-memory" in command or "markus_memory" in command)
        and marker in command
    )


def _write_json(path: Path, value: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
