"""Vectors kept across benchmark runs: ``--vector-cache DIR`` (no project imports).

:class:`CachedEmbedder` wraps an embedder; each text's vector is looked up in a SQLite file
in ``DIR`` (one file per model and dimension) under a hash of the model name and the text,
and only the texts not found are embedded (and stored). A MiniLM pass over LongMemEval's
~46,000 long turns takes tens of minutes on a shared 2-core machine; with the cache, a run
after the first costs what the ranking costs. The directory belongs in /tmp or another
scratch place, never in the repository.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def text_key(model: str, text: str) -> bytes:
    """The cache key of ``text`` embedded by ``model``."""
    return hashlib.blake2b(f"{model}\0{text}".encode(), digest_size=20).digest()


class CachedEmbedder:
    """``inner`` (an embedder) with its vectors kept in ``directory``; thread-safe."""

    def __init__(self, inner: Any, directory: Path) -> None:
        self._inner = inner
        self.model: str = inner.model
        self.dimension: int = inner.dimension
        directory.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.-]", "_", f"{self.model}-{self.dimension}")
        self._db = sqlite3.connect(directory / f"{name}.sqlite", check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [text_key(self.model, text) for text in texts]
        found = self._lookup(keys)
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if missing:
            vectors = self._inner.embed(list(missing.values()))
            rows = [
                (key, np.asarray(vector, dtype=np.float32).tobytes())
                for key, vector in zip(missing, vectors, strict=True)
            ]
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
                self._db.commit()
            found.update(rows)
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        return [np.frombuffer(found[key], dtype=np.float32).tolist() for key in keys]

    def _lookup(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        out: dict[bytes, bytes] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT key, vector FROM vectors WHERE key IN ({marks})"
                out.update(self._db.execute(query, chunk).fetchall())
        return out

    def close(self) -> None:
        with self._lock:
            self._db.close()


def cached(embedder: Any, directory: Path | None) -> Any:
    """``embedder`` behind a cache in ``directory`` (unchanged when either is None)."""
    if embedder is None or directory is None:
        return embedder
    return CachedEmbedder(embedder, directory)
