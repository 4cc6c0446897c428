"""The document-store seam: where the markdown layers keep their text (files by default).

This module holds only the contract (it sits below ``storage`` in the import layers, so a
backend can implement it); :class:`~markus_memory._fs_docs.FileDocuments` is the file store.

A markdown layer (knowledge.md, NOTEBOOK.md, state.md, the role files) does all of its I/O
through a :class:`DocumentStore`: ``with store.lock():`` → :meth:`~DocumentStore.read` → parse →
change → render → :meth:`~DocumentStore.write`, with parse caches keyed by
:meth:`~DocumentStore.version`. ``_fs_docs.FileDocuments`` is today's behaviour exactly (the
agent directory, :class:`AgentLock`, atomic writes, file signatures); the PostgreSQL store lives in
``storage/_postgres/documents.py``. Documents are named by their path inside the agent directory
(``knowledge.md``, ``role/ROLE.md``), so exporting a store to files is a plain write per name.

:meth:`~DocumentStore.exclusive` is a non-blocking, cross-host task lock (the dream cycle runs
at most once per agent at a time): a second holder gets :class:`BusyError` at once.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol

from .errors import InvalidInputError

LAYER_DOCUMENTS = ("knowledge.md", "NOTEBOOK.md", "state.md", "MEMORY.md", "memories.json")
"""Top-level documents of an agent: the three layers and the two legacy inputs."""
ROLE_DIR = "role"
"""Every regular file directly in ``role/`` (ROLE.md, HEARTBEAT.md, POLICIES.md …) is a document."""


class DocumentVersion(NamedTuple):
    """One stored version of a document: equal versions mean equal content (cache validity)."""

    token: str
    """Files: ``inode:size:mtime_ns``; PostgreSQL: the row version (unique across all rows)."""
    modified_ns: int
    """Time of the last change, nanoseconds since the epoch (dates undated entries)."""


def is_document_name(name: str) -> bool:
    """Whether ``name`` is a document of the markdown layers (the rest stays on files)."""
    if name in LAYER_DOCUMENTS:
        return True
    head, _, tail = name.partition("/")
    return head == ROLE_DIR and bool(tail) and "/" not in tail and not tail.startswith(".")


def check_name(name: object) -> str:
    """``name`` if it is a document name, else :class:`InvalidInputError`."""
    if not isinstance(name, str) or not is_document_name(name):
        raise InvalidInputError(
            f"not a document name: {name!r} (expected one of {', '.join(LAYER_DOCUMENTS)} "
            f"or {ROLE_DIR}/<file>)"
        )
    if any(ord(ch) < 32 or ch == "\\" for ch in name) or ".." in name.split("/"):
        raise InvalidInputError(f"not a document name: {name!r}")
    return name


class DocumentStore(Protocol):
    """The documents of one agent."""

    def lock(self) -> AbstractContextManager[object]:
        """The agent's write lock: reentrant in a thread; reads inside see writes inside."""

    def read(self, name: str) -> str | None:
        """The text the layers parse (a leading BOM dropped); None when absent."""

    def stored(self, name: str) -> str | None:
        """The exact stored text (a BOM kept), as :meth:`dump` has it; None when absent."""

    def write(self, name: str, text: str, *, modified_ns: int | None = None) -> None:
        """Replace the document atomically (whole old text or whole new text, never a mix).

        ``modified_ns`` (export/import) sets the modification time instead of now.
        """

    def delete(self, name: str) -> bool:
        """Remove the document; False when there was none."""

    def version(self, name: str) -> DocumentVersion | None:
        """The current version, or None when absent."""

    def exists(self, name: str) -> bool: ...

    def names(self) -> list[str]:
        """Every stored document name, sorted."""

    def dump(self) -> dict[str, str]:
        """Every document's exact stored text (a BOM kept), for export."""

    def exclusive(self, task: str) -> AbstractContextManager[None]:
        """Hold the task lock ``task`` for this agent, or raise :class:`BusyError` at once."""

    def close(self) -> None: ...
