"""Nearest transcript vectors by scoring stored vectors in bounded chunks, and how a backend
reads and writes a vector.

Vectors are float32, little-endian, stored one per message with the message's agent and its
embedding space (``<model>:<dimension>``). Without an index in the database (SQLite, or a
PostgreSQL server without pgvector) the nearest ones are found by reading them
:data:`~.recall_index.VECTOR_CHUNK` at a time and keeping the best ``limit`` scores, so memory
stays bounded whatever the history. Scores are dot products: equal to the cosine for the
unit-length vectors the embedders return.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class VectorCodec:
    """How the ``recall_vectors.vector`` column is written and read: ``param`` is the SQL of a
    vector parameter and ``column`` the SQL that reads the column (alias ``v``); ``encode`` turns
    float32 bytes into the parameter value and ``decode`` a read value back into bytes."""

    param: str = "?"
    column: str = "v.vector"
    encode: Callable[[bytes], Any] = bytes
    decode: Callable[[Any], bytes] = bytes


BYTES = VectorCodec()
"""A BLOB (SQLite) or BYTEA (PostgreSQL without pgvector) column of float32 bytes."""


def nearest_in_chunks(
    chunks: Iterable[list[tuple[int, bytes]]], query: bytes, limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` best ``(id, score)`` of the chunks for ``query``, best first (ties to the
    older message); a message met twice is scored once."""
    import numpy as np

    vector = np.frombuffer(query, dtype=np.float32)
    best_ids: list[int] = []
    best_sims = np.empty(0, dtype=np.float32)
    seen: set[int] = set()
    for chunk in chunks:
        rows = [(rowid, blob) for rowid, blob in chunk if rowid not in seen]
        if not rows:
            continue
        seen.update(rowid for rowid, _ in rows)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        sims = np.concatenate([best_sims, matrix.reshape(len(rows), -1) @ vector])
        ids = best_ids + [rowid for rowid, _ in rows]
        if len(ids) > limit:
            top = np.argpartition(-sims, limit - 1)[:limit]
            best_ids, best_sims = [ids[int(i)] for i in top], sims[top]
        else:
            best_ids, best_sims = ids, sims
    ranked = [(rowid, float(sim)) for rowid, sim in zip(best_ids, best_sims, strict=True)]
    return sorted(ranked, key=lambda pair: (-pair[1], pair[0]))
