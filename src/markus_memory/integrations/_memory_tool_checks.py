"""Checks of a memory tool command made before anything is touched: its fields, its paths.

The SDK builds a command from the model's input without validating it, so a ``create`` without
``file_text`` would reach the filesystem (and leave an empty file). Paths are capped: at most
:data:`MAX_DEPTH` levels below ``/memories``, :data:`MAX_PATH_CHARS` characters in all and
:data:`MAX_NAME_BYTES` bytes per name, so that no command can build a tree that the rest of
the library (loading, doctor, export) cannot walk.
"""

from __future__ import annotations

import os
from pathlib import Path

from anthropic.lib.tools import ToolError

MAX_DEPTH = 16
"""Most levels of a path below ``/memories`` (``/memories/a/b.md`` has 2)."""
MAX_PATH_CHARS = 1024
"""Longest path, ``/memories`` included."""
MAX_NAME_BYTES = 255
"""Longest name of one file or directory, in UTF-8 bytes (what file systems allow)."""

_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "view": (("path", str),),
    "create": (("path", str), ("file_text", str)),
    "str_replace": (("path", str), ("old_str", str), ("new_str", str)),
    "insert": (("path", str), ("insert_line", int), ("insert_text", str)),
    "delete": (("path", str),),
    "rename": (("old_path", str), ("new_path", str)),
}


def check_command(command: object) -> None:
    """:class:`ToolError` unless ``command`` names a known command with its fields well typed."""
    name = getattr(command, "command", None)
    if name not in _FIELDS:
        raise ToolError(f"Unknown memory tool command {name!r}; use one of {', '.join(_FIELDS)}")
    for field, kind in _FIELDS[name]:
        value = getattr(command, field, None)
        if not isinstance(value, kind) or isinstance(value, bool):
            got = "nothing" if value is None else type(value).__name__
            raise ToolError(
                f"Invalid input for the memory tool command {name!r}: `{field}` must be "
                f"{'an integer' if kind is int else 'a string'}, got {got}"
            )
        if isinstance(value, str) and not _encodable(value):
            raise ToolError(
                f"Invalid input for the memory tool command {name!r}: `{field}` is not valid "
                "Unicode (it holds a lone surrogate)"
            )
    view_range = getattr(command, "view_range", None) if name == "view" else None
    if view_range is not None and (
        not isinstance(view_range, list)
        or len(view_range) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
    ):
        raise ToolError("Invalid `view_range`: give two line numbers, [first, last] (-1: the end)")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_shape(path: str, relative: str) -> None:
    """:class:`ToolError` when ``path`` (``relative`` below ``/memories``) is over a cap."""
    parts = [part for part in relative.split("/") if part]
    if len(parts) > MAX_DEPTH:
        raise ToolError(
            f"The path {path[:60]}… is {len(parts)} levels deep; at most {MAX_DEPTH} levels "
            "below /memories are allowed"
        )
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(
            f"The path {path[:60]}… has {len(path)} characters; at most {MAX_PATH_CHARS} are "
            "allowed"
        )
    for part in parts:
        size = len(part.encode("utf-8", "surrogatepass"))
        if size > MAX_NAME_BYTES:
            raise ToolError(
                f"The memory command failed: a file name is too long for the file system "
                f"({path}): {part[:40]}… takes {size} bytes, a name at most {MAX_NAME_BYTES}"
            )


def tree_depth(root: Path) -> int:
    """Levels below ``root`` (0 for a file), not following links; stops past the cap."""
    deepest = 0
    for current, dirs, _files in os.walk(root):
        depth = len(Path(current).relative_to(root).parts)
        deepest = max(deepest, depth + (1 if dirs or _files else 0))
        if deepest > MAX_DEPTH:
            break
    return deepest
