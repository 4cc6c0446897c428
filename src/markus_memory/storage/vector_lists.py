"""Inverted lists over an agent's vectors in the store: a nearest-vector search that reads a
bounded share of a long history instead of every vector (an IVF index, kept in the database).

Once an agent has :data:`LISTS_FROM` vectors of one embedding space, they are clustered by
spherical k-means into about √n lists; each list's centroid is a row of
``recall_vector_lists`` and each vector row names its list (``recall_vectors.list``). A
search scores the centroids, then only the vectors of the :func:`probes` nearest lists (and
any vector not yet in a list); the caller adds the query's lexical candidates, scored exactly.
A vector stored later joins its nearest list at once; when the vectors have doubled since the
lists were made, they are made again, in the transaction that stores the vectors, so a
search never sees half a set. Below :data:`LISTS_FROM` every vector is scored, exactly.

The functions take a :class:`~.recall_fetch.Sql` (one connection inside a transaction) and
need numpy, as every vector path does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .recall_fetch import Sql

LISTS_FROM = 20_000
"""Vectors of one agent and model from which they are searched through lists (at 20,000,
scoring every one takes tens of milliseconds; below, the exact scan is cheap enough)."""
MIN_LISTS = 64
MAX_LISTS = 1_024
TRAIN_SAMPLE = 32_768
"""Vectors the centroids are trained on (every n-th by id; at most ~50 MB of float32 for
384 dimensions, held only while the lists are made)."""
ROUNDS = 10
"""k-means rounds."""


def list_count(vectors: int) -> int:
    """How many lists ``vectors`` vectors are clustered into: about √n, within bounds."""
    return max(MIN_LISTS, min(MAX_LISTS, round(math.sqrt(vectors))))


def probes(lists: int) -> int:
    """How many of ``lists`` lists a search reads: about 2·√lists (24 of 141 lists, 64 of
    1,024), so the share of the history read falls as it grows."""
    return min(lists, max(8, round(2 * math.sqrt(lists))))


def centroids(sql: Sql, agent: int, model: str) -> tuple[int, Any] | None:
    """``(vectors the lists were made from, centroid matrix)`` of the agent's ``model``
    vectors (row ``i`` is list ``i``), or None when they have no lists."""
    import numpy as np

    rows = sql.rows(
        "SELECT list, made_from, centroid FROM recall_vector_lists WHERE agent = ? AND model = ? "
        "ORDER BY list",
        (agent, model),
    )
    if not rows:
        return None
    matrix = np.frombuffer(b"".join([r[2] for r in rows]), dtype=np.float32)
    return int(rows[0][1]), matrix.reshape(len(rows), -1)


def nearest_lists(matrix: Any, vectors: Any) -> list[int]:
    """The list of each row of ``vectors`` (float32, one per row): its nearest centroid."""
    import numpy as np

    return [int(i) for i in np.argmax(vectors @ matrix.T, axis=1)]


def to_probe(matrix: Any, query: bytes) -> list[int]:
    """The lists a search for ``query`` reads, nearest centroid first."""
    import numpy as np

    scores = matrix @ np.frombuffer(query, dtype=np.float32)
    count = probes(len(matrix))
    best = np.argpartition(-scores, count - 1)[:count]
    return [int(i) for i in best[np.argsort(-scores[best], kind="stable")]]


def due(sql: Sql, agent: int, model: str, made_from: int | None) -> int | None:
    """The agent's ``model`` vector count when its lists should be made (again): it reached
    :data:`LISTS_FROM` and has no lists, or doubled since they were made; else None."""
    floor = LISTS_FROM if made_from is None else 2 * made_from
    # Counting stops at the floor: a store far below it pays for no full count.
    (count,) = sql.rows(
        "SELECT count(*) FROM (SELECT 1 FROM recall_vectors WHERE agent = ? AND model = ? "
        "LIMIT ?) v",
        (agent, model, floor),
    )[0]
    return int(count) if int(count) >= floor else None


def matrix(rows: Sequence[tuple[Any, ...]]) -> Any:
    """The float32 vectors of ``(id, bytes)`` rows, one per row."""
    import numpy as np

    flat = np.frombuffer(b"".join([r[1] for r in rows]), dtype=np.float32)
    return flat.reshape(len(rows), -1)


def make(
    sql: Sql,
    agent: int,
    model: str,
    vectors: int,
    chunks: Callable[[], Iterable[Sequence[tuple[int, bytes]]]],
) -> int:
    """Cluster the agent's ``model`` vectors (``vectors`` of them, read twice through
    ``chunks``: its ``(id, float32 bytes)`` rows in id order, a bounded chunk at a time) into
    lists, replacing any it had, and put every vector in its list; the number of lists."""
    import numpy as np

    step, seen, picked = max(1, vectors // TRAIN_SAMPLE), 0, []
    for rows in chunks():  # every step-th vector, in id order
        picked.append(matrix(rows)[(-seen) % step :: step])
        seen += len(rows)
    sample = np.concatenate(picked)
    del picked
    centres = train(sample, list_count(vectors))
    del sample
    sql.run("DELETE FROM recall_vector_lists WHERE agent = ? AND model = ?", (agent, model))
    sql.many(
        "INSERT INTO recall_vector_lists (agent, model, list, made_from, centroid) "
        "VALUES (?, ?, ?, ?, ?)",
        [(agent, model, i, vectors, centre.tobytes()) for i, centre in enumerate(centres)],
    )
    for rows in chunks():
        lists = nearest_lists(centres, matrix(rows))
        sql.many(
            "UPDATE recall_vectors SET list = ? WHERE doc = ?",
            [(i, int(r[0])) for i, r in zip(lists, rows, strict=True)],
        )
    return len(centres)


def train(sample: Any, lists: int, rounds: int = ROUNDS) -> Any:
    """Spherical k-means: ``lists`` unit centroids of the rows of ``sample`` (float32), seeded
    from evenly spaced rows (deterministic); a list left empty is seeded again from the row
    farthest from its centroid."""
    import numpy as np

    lists = min(lists, len(sample))
    centres = sample[np.linspace(0, len(sample) - 1, lists).astype(np.int64)].copy()
    for _ in range(rounds):
        scores = sample @ centres.T
        nearest = np.argmax(scores, axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, nearest, sample)
        empty = np.flatnonzero(np.bincount(nearest, minlength=lists) == 0)
        if len(empty):
            worst = np.argsort(scores[np.arange(len(sample)), nearest])[: len(empty)]
            sums[empty] = sample[worst]
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centres = (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return centres
