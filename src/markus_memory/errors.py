"""The exception tree of markus-memory.

Every exception the package raises on purpose derives from :class:`MarkusMemoryError`::

    MarkusMemoryError
    ├── InvalidInputError        a caller passed a bad argument (also a ValueError)
    │   ├── InvalidIdError       an agent id, key or session id that is unsafe or malformed
    │   └── RefusedError         a well-formed request the memory refuses in its present state
    ├── NotFoundError            an unknown session, activity or section (also a KeyError)
    ├── CorruptFileError         a file on disk cannot be decoded or parsed; it is left untouched
    │   └── SymlinkError         an agent file is a symbolic link (never followed)
    ├── UnwritableError          the file system refused a write (read-only, full …); also an
    │                            OSError with the refusal's errno
    ├── LockTimeoutError         the per-agent lock could not be taken in time
    │   └── BusyError            an exclusive task (a dream) already runs for the agent elsewhere
    ├── ClosedError              the memory handle was closed; open the agent again
    ├── StorageError             the database backend failed (SQLite or PostgreSQL)
    │   ├── BackendUnavailableError   the backend cannot be reached at all
    │   │   ├── DatabaseMissingError  the PostgreSQL server runs but has no such database
    │   │   └── LoginRefusedError     the PostgreSQL server refused the user or password
    │   └── SchemaMissingError   the schema named by the URL's search_path does not exist
    ├── MigrationError           a legacy migration failed; nothing was deleted
    ├── LLMError                 a chat or embedding model failed, timed out or answered garbage
    └── ExtraNotInstalledError   an optional dependency is missing (also an ImportError)

A *refused* write (a knowledge.md cap, a full notebook) is not an exception: it is a result
with ``ok=False`` and a ``reason`` so that the model can see it and adapt. The tool layer never
lets any exception reach the model; it turns them into the Markus error result shapes.
"""

from __future__ import annotations

import errno
from pathlib import Path


class MarkusMemoryError(Exception):
    """Base class of every error raised on purpose by markus-memory."""


class InvalidInputError(MarkusMemoryError, ValueError):
    """A caller passed an argument of the wrong type, size or shape."""


class InvalidIdError(InvalidInputError):
    """An identifier that could escape its directory or is otherwise malformed."""

    def __init__(self, kind: str, value: object, why: str) -> None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"invalid {kind} {shown}: {why}")
        self.kind = kind
        self.why = why


class RefusedError(InvalidInputError):
    """A well-formed request refused because of what the memory holds now (a destination that
    already has the agent, an entry owned by the system); the command line exits 1 for it."""


class NotFoundError(MarkusMemoryError, KeyError):
    """An unknown session, activity, section or agent."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class CorruptFileError(MarkusMemoryError):
    """A memory file exists but cannot be decoded or parsed. It is never overwritten silently."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


class SymlinkError(CorruptFileError):
    """An agent file is a symbolic link. Agent files are opened without following links, so
    that a link planted in an agent directory can neither read nor write outside it."""

    def __init__(self, path: Path) -> None:
        if path.is_dir():
            fix = (
                "Replace it with a real directory holding the files (e.g. "
                'cp -a "$(readlink -f DIR)" DIR.new && rm DIR && mv DIR.new DIR)'
            )
        else:
            fix = (
                "Replace it with the file itself "
                '(e.g. cp --remove-destination "$(readlink -f FILE)" FILE)'
            )
        super().__init__(
            path, f"is a symbolic link; agent files are never opened through links. {fix}"
        )


WRITE_REFUSALS = {
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied (the user may not write there)",
    errno.EPERM: "permission denied (the user may not write there)",
    errno.ENOSPC: "no space left on the disk",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "the file would exceed the file size limit",
    errno.ENAMETOOLONG: "a file name is too long for the file system",
}
"""Why the file system refuses a write, by errno: the refusals :class:`UnwritableError` names."""


class UnwritableError(MarkusMemoryError, OSError):
    """The file system refused to write ``path``: read-only, no permission, full, or a name
    too long. Nothing was written. ``errno``, ``strerror`` and ``filename`` are the refusal's,
    so code that handles an ``OSError`` keeps working."""

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.path = path
        self.why = WRITE_REFUSALS.get(cause.errno or 0) or cause.strerror or str(cause)

    def __str__(self) -> str:
        return f"could not write {self.path}: {self.why}"


class LockTimeoutError(MarkusMemoryError):
    """The per-agent write lock was held by someone else for too long."""


class BusyError(LockTimeoutError):
    """An exclusive task (the dream cycle) is already running for this agent, maybe on another
    host; the caller skips it rather than waiting."""


class ClosedError(MarkusMemoryError):
    """An :class:`~markus_memory.AgentMemory` (or a store) was used after ``close()``."""


class StorageError(MarkusMemoryError):
    """The episodic/index database failed."""


class BackendUnavailableError(StorageError):
    """The database server cannot be reached (refused, timed out, wrong URL)."""


class DatabaseMissingError(BackendUnavailableError):
    """The PostgreSQL server answers but has no database of the URL's name (create it, or fix
    the name in the URL)."""


class LoginRefusedError(BackendUnavailableError):
    """The PostgreSQL server refused the URL's user or password."""


class SchemaMissingError(StorageError):
    """The database exists but the schema its ``search_path`` names does not (create it)."""


class MigrationError(MarkusMemoryError):
    """A legacy migration could not complete. The legacy files are kept as they were."""


class LLMError(MarkusMemoryError):
    """A chat or embedding model call failed, timed out or returned an unusable answer."""


class ExtraNotInstalledError(MarkusMemoryError, ImportError):
    """An optional dependency is missing; the message names the extra that provides it."""

    def __init__(self, extra: str, module: str) -> None:
        super().__init__(
            f"{module!r} is not installed; install it with: pip install 'markus-memory[{extra}]'"
        )
        self.extra = extra


def one_line(text: str) -> str:
    """``text`` on one line: the first line of a multi-line message (a database's), spaces
    squeezed."""
    first = text.strip().split("\n", 1)[0]
    return " ".join(first.split())
