"""Every failure a command can reach, as one line that says what happened and what to do.

Exit codes (README, "Command line"): 1 the operation failed or was refused (a missing agent, a
corrupt file, a refused write, an unreachable database); 2 the command line was wrong (click's
usage errors, a malformed id, key or value). Nothing prints a traceback unless
``MARKUS_DEBUG=1`` is set, for a bug report.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

import click

from ..backend import explain_url
from ..errors import (
    BusyError,
    CorruptFileError,
    DatabaseMissingError,
    InvalidInputError,
    LLMError,
    LockTimeoutError,
    LoginRefusedError,
    MarkusMemoryError,
    RefusedError,
    SchemaMissingError,
    StorageError,
    one_line,
)
from ..layers.notebook import utf8_damage

DEBUG_ENV = "MARKUS_DEBUG"


class InputError(click.ClickException):
    """A refused argument: printed as ``Error: …``, exit code 2 like click's usage errors."""

    exit_code = 2


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def translate(exc: BaseException, agent: str | None, urls: Iterable[str]) -> click.ClickException:
    """The one-line message and exit code for ``exc``."""
    if isinstance(exc, RefusedError):
        return click.ClickException(one_line(str(exc)))
    if isinstance(exc, InvalidInputError):
        return InputError(one_line(str(exc)))
    if isinstance(exc, CorruptFileError):
        return click.ClickException(corrupt_file(exc, agent))
    if isinstance(exc, BusyError):
        return click.ClickException(f"{one_line(str(exc))}; try again when it has finished")
    if isinstance(exc, LockTimeoutError):
        return click.ClickException(
            f"{one_line(str(exc))}; another process holds the agent's lock, try again later"
        )
    if isinstance(exc, StorageError):
        return click.ClickException(storage_failure(exc, urls))
    if isinstance(exc, LLMError):
        return click.ClickException(
            f"{one_line(str(exc))}; check --model, --base-url and the API key"
        )
    if isinstance(exc, MarkusMemoryError):
        return click.ClickException(one_line(str(exc)))
    if isinstance(exc, OSError):
        return click.ClickException(os_failure(exc))
    return click.ClickException(
        f"unexpected {type(exc).__name__}: {one_line(str(exc))} (a bug: run again with "
        f"{DEBUG_ENV}=1 for the traceback and report it)"
    )


def corrupt_file(exc: CorruptFileError, agent: str | None) -> str:
    """A damaged file: where, and the command that repairs it."""
    where = str(exc.path)
    if isinstance(exc.__cause__, UnicodeDecodeError):
        damage = _damage(exc.path)
        if damage:
            line, column, byte = damage[0]
            more = f" (and {len(damage) - 1} more)" if len(damage) > 1 else ""
            return (
                f"{where} line {line}, column {column}: byte 0x{byte:02x} is not valid UTF-8"
                f"{more}; repair it with: markus-memory doctor --fix{_agent_flag(agent)} "
                "(keeps every other byte and a copy of the original)"
            )
    return (
        f"{one_line(str(exc))}; check it with: markus-memory doctor{_agent_flag(agent)} "
        "(--fix repairs what is safe)"
    )


def _damage(path: Path) -> list[tuple[int, int, int]]:
    try:
        return utf8_damage(path.read_bytes())
    except OSError:
        return []


def _agent_flag(agent: str | None) -> str:
    return f" --agent {agent}" if agent else ""


def os_failure(exc: OSError) -> str:
    """A file-system refusal: which file, and what to change."""
    name = f" {exc.filename}" if exc.filename else ""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied on{name}: give your user access to it, or use another --home"
    if exc.errno == errno.EROFS:
        return f"read-only file system at{name}: writing needs a writable --home"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return f"{reason} writing{name}: free some space and try again (nothing was half-written)"
    if exc.errno == errno.ENOENT:
        return f"no such file or directory:{name}"
    if exc.errno == errno.ENOTDIR:
        return f"not a directory:{name} (a file stands where a directory belongs): move it away"
    if exc.errno == errno.EISDIR:
        return f"is a directory:{name} (a directory stands where a file belongs): move it away"
    if exc.errno == errno.EADDRINUSE:
        return f"{reason}: pick another --port or stop what listens on it"
    return f"{reason}:{name}".rstrip(":")


def storage_failure(exc: StorageError, urls: Iterable[str]) -> str:
    """A database failure; for PostgreSQL, one fresh connection tells a missing database, a
    refused login, a missing schema and an unreachable server apart (the API raises the first
    three as their own errors already, explained)."""
    if isinstance(exc, (DatabaseMissingError, LoginRefusedError, SchemaMissingError)):
        return one_line(str(exc))
    for url in urls:
        found = explain_url(url)
        if found is not None:
            return one_line(str(found))
    return f"{one_line(str(exc))}; check the database (markus-memory doctor)"
