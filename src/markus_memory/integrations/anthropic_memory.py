"""Anthropic's client-side memory tool (``memory_20250818``) over one agent's memory.

:class:`MarkusMemoryTool` subclasses the SDK's ``BetaAbstractMemoryTool`` (and
:class:`AsyncMarkusMemoryTool` its ``BetaAsyncAbstractMemoryTool``, for ``AsyncAnthropic``), so
the SDK's tool runner dispatches the model's commands (view, create, str_replace, insert,
delete, rename) to it. Under ``/memories`` the model sees the agent's markdown layers as files
(``knowledge.md``, ``NOTEBOOK.md``, ``state.md``), whose writes go through the layers, so locks,
caps and refusals hold: an edit either lands in the layer (free lines become entries, see
:mod:`._layer_text`) or is refused with the format to use, never "edited" with text dropped.
Beside them are free files and directories the model creates itself, kept in the agent's
``memories/`` directory. Free files follow the SDK's reference filesystem implementation
exactly (it does the work, with its messages and rules); on top of it any symbolic link in a
path is refused, not only one that leads outside, and paths are capped in depth and length
(:mod:`._memory_tool_checks`); a command with missing or mistyped fields touches nothing.
Every failure reaches the model as a ``ToolError`` with a message, never as a traceback, and a
failed command changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import WRITE_REFUSALS, ExtraNotInstalledError, MarkusMemoryError
from ..tools import hide_host_paths
from ._layer_files import BY_NAME, LAYER_FILES, LayerFile, write_layer
from ._layer_text import LayerRefusal
from ._memory_tool_checks import MAX_DEPTH, check_command, check_shape, tree_depth

try:
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        BetaFunctionToolResultType,
        ToolError,
    )
    from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
    from anthropic.types.beta import (
        BetaMemoryTool20250818Command,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("anthropic", exc.name or "anthropic") from exc

if TYPE_CHECKING:
    from ..memory import AgentMemory

log = logging.getLogger(__name__)

ROOT = "/memories"
FREE_DIR = "memories"
"""The directory, inside the agent's directory, that holds the model's free files."""
MAX_LINES = 999999
_WIDTH = len(str(MAX_LINES))


class MarkusMemoryTool(BetaAbstractMemoryTool):
    """The memory tool backend over ``memory``: layers as files, free files beside them."""

    def __init__(self, memory: AgentMemory, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.memory = memory
        self._files = BetaLocalFilesystemMemoryTool(base_path=str(memory.directory))
        self.memory_root: Path = self._files.memory_root

    def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        try:
            check_command(command)
            with self.memory.lock:
                return super().execute(command)
        except ToolError as exc:
            raise ToolError(self._for_model(str(exc))) from None
        except (AttributeError, TypeError, ValueError) as exc:
            name = getattr(command, "command", None)
            said = f"Invalid input for the memory tool command {name!r}: {exc}"
            raise ToolError(self._for_model(said)) from None
        except MarkusMemoryError as exc:  # a refusal the model can read (a read-only home …)
            raise ToolError(self._for_model(f"The memory command failed: {exc}")) from None
        except OSError as exc:  # free files: the reference implementation's raw OSErrors
            why = WRITE_REFUSALS.get(exc.errno or 0) or exc.strerror or str(exc)
            where = f" ({exc.filename})" if exc.filename else ""
            raise ToolError(self._for_model(f"The memory command failed: {why}{where}")) from None
        except Exception as exc:  # the model must never see a traceback; the host sees the log
            log.exception("memory tool command failed")
            said = f"The memory command failed: {type(exc).__name__}: {exc}"
            raise ToolError(self._for_model(said)) from None

    def _for_model(self, text: str) -> str:
        """``text`` with host paths turned into the ``/memories`` paths the model uses."""
        return hide_host_paths(text, self.memory, shown={self.memory_root: ROOT})

    # -- commands ----------------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        layer = self._layer(command.path)
        if layer is not None:
            return _numbered(command.path, layer.read(self.memory), command.view_range)
        self._check(command.path)
        if _relative(command.path) == "":
            return self._view_root(command.path)
        return self._files.view(command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> BetaFunctionToolResultType:
        if self._layer(command.path) is not None:
            raise ToolError(f"File {command.path} already exists")
        self._check(command.path)
        return self._files.create(command)

    def str_replace(
        self, command: BetaMemoryTool20250818StrReplaceCommand
    ) -> BetaFunctionToolResultType:
        layer = self._layer(command.path)
        if layer is None:
            self._check(command.path)
            return self._files.str_replace(command)
        content = layer.read(self.memory)
        count = content.count(command.old_str)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{command.old_str}` did not appear "
                f"verbatim in {command.path}."
            )
        if count > 1:
            lines = _match_lines(content, command.old_str)
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str "
                f"`{command.old_str}` in lines: {', '.join(map(str, lines))}. "
                "Please ensure it is unique"
            )
        changed = content[: content.find(command.old_str)].count("\n")
        new_content = content.replace(command.old_str, command.new_str)
        notes = self._write(layer, content, new_content)
        if notes:
            new_content = layer.read(self.memory)
            changed = min(changed, new_content.count("\n"))
        new_lines = new_content.split("\n")
        first, last = max(0, changed - 2), min(len(new_lines), changed + 3)
        snippet = [
            f"{str(n).rjust(_WIDTH)}\t{new_lines[n - 1]}" for n in range(first + 1, last + 1)
        ]
        return (
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + "\n".join(snippet) + _noted(notes)
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> BetaFunctionToolResultType:
        layer = self._layer(command.path)
        if layer is None:
            self._check(command.path)
            return self._files.insert(command)
        content = layer.read(self.memory)
        lines = content.split("\n")
        if lines[-1] == "":
            lines.pop()
        if command.insert_line < 0 or command.insert_line > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {command.insert_line}. "
                f"It should be within the range [0, {len(lines)}]."
            )
        lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
        new_content = "\n".join(lines)
        new_content = new_content if new_content.endswith("\n") else new_content + "\n"
        notes = self._write(layer, content, new_content)
        return f"The file {command.path} has been edited." + _noted(notes)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> BetaFunctionToolResultType:
        layer = self._layer(command.path)
        if layer is not None:
            raise ToolError(
                f"Cannot delete {command.path}: it is {layer.description}. "
                "Edit its content with str_replace instead"
            )
        self._check(command.path)
        return self._files.delete(command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> BetaFunctionToolResultType:
        layer = self._layer(command.old_path)
        if layer is not None:
            raise ToolError(f"Cannot rename {command.old_path}: it is {layer.description}")
        if self._layer(command.new_path) is not None:
            raise ToolError(f"The destination {command.new_path} already exists")
        self._check(command.old_path)
        self._check(command.new_path)
        old = self.memory_root / _relative(command.old_path)
        if _relative(command.old_path) and not os.path.lexists(old):
            # Checked first: the reference would create the new parent directory before failing.
            raise ToolError(f"The path {command.old_path} does not exist")
        depth = len([p for p in _relative(command.new_path).split("/") if p])
        if _relative(command.old_path) and depth + tree_depth(old) > MAX_DEPTH:
            raise ToolError(
                f"Moving {command.old_path} to {command.new_path} would nest files "
                f"{depth + tree_depth(old)} levels deep; at most {MAX_DEPTH} are allowed"
            )
        return self._files.rename(command)

    def clear_all_memory(self) -> BetaFunctionToolResultType:
        """Remove the free files only; the layers are cleared through their own tools."""
        with self.memory.lock:
            return self._files.clear_all_memory()

    # -- paths -------------------------------------------------------------------------------

    def _layer(self, path: object) -> LayerFile | None:
        if not isinstance(path, str) or not path.startswith(ROOT):
            return None
        return BY_NAME.get(posixpath.normpath("/" + _relative(path)).lstrip("/"))

    def _check(self, path: object) -> None:
        """Refuse a bad path, and any symbolic link along it, before the filesystem is touched."""
        if not isinstance(path, str):
            raise ToolError(f"Path must be a string, got: {type(path).__name__}")
        if not path.startswith(ROOT):
            raise ToolError(f"Path must start with {ROOT}, got: {path}")
        if "\x00" in path:
            raise ToolError(f"Path {path!r} contains a NUL byte")
        check_shape(path, _relative(path))
        current = self.memory_root
        for part in [self.memory_root.name, *_relative(path).split("/")]:
            current = current if part == self.memory_root.name else current / part
            try:
                if stat.S_ISLNK(os.lstat(current).st_mode):
                    raise ToolError(f"Path {path} goes through a symbolic link, which is refused")
            except (FileNotFoundError, NotADirectoryError):
                return
        if not self.memory_root.exists():
            self.memory_root.mkdir(parents=True, mode=0o700, exist_ok=True)

    def _write(self, layer: LayerFile, old: str, new: str) -> list[str]:
        try:
            return write_layer(self.memory, layer, old, new)
        except LayerRefusal as refusal:
            raise ToolError(str(refusal)) from None

    def _view_root(self, path: str) -> str:
        """The reference listing of /memories, with the layer files among the free ones."""
        listing = str(
            self._files.view(BetaMemoryTool20250818ViewCommand(command="view", path=path))
        )
        header, root_line, *items = listing.split("\n")
        prefix = path.rstrip("/") if path.rstrip("/") != ROOT else path
        for layer in LAYER_FILES:
            size = len(layer.read(self.memory).encode("utf-8"))
            items.append(f"{_size(size)}\t{prefix}/{layer.name}")
        items.sort(key=lambda line: line.split("\t", 1)[1].split("/"))
        return "\n".join([header, root_line, *items])


class AsyncMarkusMemoryTool(BetaAsyncAbstractMemoryTool):
    """:class:`MarkusMemoryTool` for ``AsyncAnthropic``: the same commands, answers and
    refusals, each run in a worker thread (``asyncio.to_thread``) so that the file and database
    work never blocks the event loop."""

    def __init__(self, memory: AgentMemory, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.memory = memory
        self.tool = MarkusMemoryTool(memory)

    async def execute(self, command: BetaMemoryTool20250818Command) -> BetaFunctionToolResultType:
        return await asyncio.to_thread(self.tool.execute, command)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        return await self.execute(command)

    async def create(
        self, command: BetaMemoryTool20250818CreateCommand
    ) -> BetaFunctionToolResultType:
        return await self.execute(command)

    async def str_replace(
        self, command: BetaMemoryTool20250818StrReplaceCommand
    ) -> BetaFunctionToolResultType:
        return await self.execute(command)

    async def insert(
        self, command: BetaMemoryTool20250818InsertCommand
    ) -> BetaFunctionToolResultType:
        return await self.execute(command)

    async def delete(
        self, command: BetaMemoryTool20250818DeleteCommand
    ) -> BetaFunctionToolResultType:
        return await self.execute(command)

    async def rename(
        self, command: BetaMemoryTool20250818RenameCommand
    ) -> BetaFunctionToolResultType:
        return await self.execute(command)

    async def clear_all_memory(self) -> BetaFunctionToolResultType:
        """Remove the free files only; the layers are cleared through their own tools."""
        return await asyncio.to_thread(self.tool.clear_all_memory)


def _noted(notes: list[str]) -> str:
    return " Kept as entries: " + "; ".join(notes) + "." if notes else ""


def _relative(path: str) -> str:
    return path[len(ROOT) :].lstrip("/")


def _numbered(path: str, content: str, view_range: list[int] | None) -> str:
    lines = content.split("\n")
    if len(lines) > MAX_LINES:
        raise ToolError(f"File {path} exceeds maximum line limit of 999,999 lines.")
    start = 1
    if view_range and len(view_range) == 2:
        first = max(1, view_range[0]) - 1
        end = len(lines) if view_range[1] == -1 else view_range[1]
        lines, start = lines[first:end], first + 1
    numbered = [f"{str(i + start).rjust(_WIDTH)}\t{line}" for i, line in enumerate(lines)]
    return f"Here's the content of {path} with line numbers:\n" + "\n".join(numbered)


def _match_lines(content: str, needle: str) -> list[int]:
    found, start = [], 0
    while (pos := content.find(needle, start)) != -1:
        found.append(content[:pos].count("\n") + 1)
        start = pos + 1
    return found


def _size(n: int) -> str:
    if n == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((n.bit_length() - 1) // 10, len(units) - 1)
    value = n / (1024**i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


__all__ = ["FREE_DIR", "ROOT", "AsyncMarkusMemoryTool", "MarkusMemoryTool"]
