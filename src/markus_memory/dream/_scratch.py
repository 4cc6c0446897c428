"""A document store in memory, seeded from a real one: the dream computes its post-dream
texts with the layers' own code (validation, caps, rendering, pruning) without writing, so
that the journal can record them before any document changes."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from .._docs import DocumentStore, DocumentVersion


class ScratchDocuments:
    """The named documents of ``source`` as the layers read them; writes stay here."""

    def __init__(self, source: DocumentStore, names: Iterable[str]) -> None:
        self._texts = {name: source.read(name) for name in names}
        self._versions = {name: source.version(name) for name in self._texts}
        self.written: set[str] = set()
        self._writes = 0

    def lock(self) -> AbstractContextManager[object]:
        return nullcontext()

    def read(self, name: str) -> str | None:
        return self._texts.get(name)

    def stored(self, name: str) -> str | None:
        return self._texts.get(name)

    def write(self, name: str, text: str, *, modified_ns: int | None = None) -> None:
        self._texts[name] = text
        self.written.add(name)
        self._writes += 1
        stamp = time.time_ns() if modified_ns is None else modified_ns
        self._versions[name] = DocumentVersion(f"scratch:{self._writes}", stamp)

    def delete(self, name: str) -> bool:
        present = self._texts.get(name) is not None
        self._texts[name] = None
        self._versions[name] = None
        self.written.add(name)
        return present

    def version(self, name: str) -> DocumentVersion | None:
        return self._versions.get(name)

    def exists(self, name: str) -> bool:
        return self._texts.get(name) is not None

    def names(self) -> list[str]:
        return sorted(name for name, text in self._texts.items() if text is not None)

    def dump(self) -> dict[str, str]:
        return {name: text for name, text in self._texts.items() if text is not None}

    @contextmanager
    def exclusive(self, task: str) -> Iterator[None]:
        yield

    def close(self) -> None:
        return None
