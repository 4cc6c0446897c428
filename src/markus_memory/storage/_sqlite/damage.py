"""What is known about a damaged ``data.db``: once something found it damaged, nothing writes
to it again, in this process or another.

The finding is kept in the process and in a note beside the file, ``data.db.damage-found``
(the file's inode, then what said so): a later process, or the next command, reads the note
when it opens the file. The note names the inode, so a file put in its place (the repair moves
the damaged one aside) is a new one and the note no longer applies; it is removed then.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

NOT_WRITTEN = " Nothing more is written to it, so that it stays as it was found."
NOTE_SUFFIX = ".damage-found"
_DAMAGE_CODES = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
_FOUND: dict[tuple[str, int], str] = {}


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file is damaged (not merely busy, full or read-only)."""
    code = getattr(exc, "sqlite_errorname", "")
    return code.split("_VTAB")[0] in _DAMAGE_CODES or "malformed" in str(exc)


def note_path(path: Path) -> Path:
    return path.with_name(path.name + NOTE_SUFFIX)


def _inode(path: Path) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return -1


def remember_damage(path: Path, detail: str) -> None:
    """Keep the finding for this process and, where the folder can be written, for others."""
    key = os.path.realpath(path)
    inode = _inode(Path(key))
    _FOUND[(key, inode)] = detail
    try:
        note_path(Path(key)).write_text(f"{inode}\n{detail}\n", encoding="utf-8")
    except OSError:
        pass  # a read-only home: nobody writes there anyway


def known_damage(path: Path) -> str | None:
    """What said ``path`` is damaged, if anything did (in this process or in its note)."""
    key = os.path.realpath(path)
    inode = _inode(Path(key))
    found = _FOUND.get((key, inode))
    if found is not None:
        return found
    note = note_path(Path(key))
    try:
        text = note.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    recorded, _, detail = text.partition("\n")
    if recorded.strip() != str(inode):
        try:
            note.unlink()  # about a file that is no longer there
        except OSError:
            pass
        return None
    return detail.strip() or "found damaged"
