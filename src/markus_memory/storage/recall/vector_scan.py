"""Nearest transcript vectors by scoring stored vectors in bounded chunks, and how a backend
reads and writes a vector.

Vectors are float32, little-endian, stored one per message with the message's agent and its
embedding space (``<model>:<dimension>``). Without an index in the database (SQLite, or a
PostgreSQL server without pgvector) the nearest ones are found by reading them
:data:`~.vectors.VECTOR_CHUNK` at a time and keeping the best ``limit`` scores, so memory
stays bounded whatever the history. Scores are dot products: equal to the cosine for the
unit-length vectors the embedders return.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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
    chunks: Iterable[Sequence[tuple[int, bytes]]], query: bytes, limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` best ``(id, score)`` of the chunks for ``query``, best first, exactly as a
    full sort would give them: ties (identical texts have identical vectors) go to the older
    message, also at the cut; a message met twice is scored once; a damaged vector (one that
    scores NaN) is left out. Only the best ``limit`` so far and one chunk are held."""
    if limit <= 0:
        return []
    import numpy as np

    vector = np.frombuffer(query, dtype=np.float32)
    ids = np.empty(0, dtype=np.int64)
    sims = np.empty(0, dtype=np.float32)
    for chunk in chunks:
        if not chunk:
            continue
        found = np.fromiter((row[0] for row in chunk), dtype=np.int64, count=len(chunk))
        matrix = np.frombuffer(b"".join([row[1] for row in chunk]), dtype=np.float32)
        scored = matrix.reshape(len(chunk), -1) @ vector
        finite = np.isfinite(scored)  # a damaged (NaN) vector is not ranked at all
        ids = np.concatenate([ids, found[finite]])
        sims = np.concatenate([sims, scored[finite]])
        ids, first = np.unique(ids, return_index=True)
        sims = sims[first]
        if len(ids) > limit:
            keep = _best(ids, sims, limit)
            ids, sims = ids[keep], sims[keep]
    order = np.lexsort((ids, -sims))
    return [(int(doc), float(sim)) for doc, sim in zip(ids[order], sims[order], strict=True)]


def _best(ids: Any, sims: Any, limit: int) -> Any:
    """Positions of the ``limit`` best: every score above the ``limit``-th, then the oldest
    of those equal to it."""
    import numpy as np

    cut = -np.partition(-sims, limit - 1)[limit - 1]
    above = np.flatnonzero(sims > cut)
    tied = np.flatnonzero(sims == cut)
    tied = tied[np.argsort(ids[tied], kind="stable")[: limit - len(above)]]
    return np.concatenate([above, tied])
