"""FileDocuments: the documents of one agent as files in its directory (the default store)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._docs import LAYER_DOCUMENTS, ROLE_DIR, DocumentVersion, is_document_name
from ._fs import atomic_write_text, open_file, read_bytes, read_text, signature
from ._lock import AgentLock, lock_fd, unlock_fd
from .errors import BusyError, CorruptFileError


class FileDocuments:
    """Documents as files in the agent directory under :class:`AgentLock` (the default)."""

    def __init__(self, root: Path, lock: AgentLock) -> None:
        self.root = root
        self._lock = lock

    def path(self, name: str) -> Path:
        return self.root / name

    def lock(self) -> AgentLock:
        return self._lock

    def read(self, name: str) -> str | None:
        return read_text(self.root / name)

    def write(self, name: str, text: str, *, modified_ns: int | None = None) -> None:
        atomic_write_text(self.root / name, text)
        if modified_ns is not None:
            os.utime(self.root / name, ns=(modified_ns, modified_ns))

    def delete(self, name: str) -> bool:
        try:
            (self.root / name).unlink()
        except FileNotFoundError:
            return False
        return True

    def version(self, name: str) -> DocumentVersion | None:
        sig = signature(self.root / name)
        if sig is None:
            return None
        return DocumentVersion(f"{sig.inode}:{sig.size}:{sig.mtime_ns}", sig.mtime_ns)

    def exists(self, name: str) -> bool:
        return (self.root / name).exists()

    def names(self) -> list[str]:
        found = [n for n in LAYER_DOCUMENTS if (self.root / n).is_file()]
        role = self.root / ROLE_DIR
        if role.is_dir():
            found += [
                f"{ROLE_DIR}/{p.name}"
                for p in role.iterdir()
                if p.is_file() and is_document_name(f"{ROLE_DIR}/{p.name}")
            ]
        return sorted(found)

    def stored(self, name: str) -> str | None:
        try:
            data = read_bytes(self.root / name)
        except FileNotFoundError:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptFileError(self.root / name, f"not valid UTF-8 ({exc.reason})") from exc

    def dump(self) -> dict[str, str]:
        texts = {}
        for name in self.names():
            text = self.stored(name)
            if text is not None:
                texts[name] = text
        return texts

    def task_lock(self, task: str) -> Path:
        """The lock file of :meth:`exclusive` (it stays once a task has run)."""
        return self.root / f".{task}.lock"

    @contextmanager
    def exclusive(self, task: str) -> Iterator[None]:
        """A non-blocking ``flock`` on ``<agent dir>/.<task>.lock`` (threads and processes)."""
        path = self.task_lock(task)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_file(path, os.O_RDWR | os.O_CREAT)
        try:
            try:
                lock_fd(fd)
            except BlockingIOError:
                raise BusyError(f"{task} is already running for the agent in {self.root}") from None
            try:
                yield
            finally:
                unlock_fd(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        return None
