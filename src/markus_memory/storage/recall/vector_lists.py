"""Inverted lists over an agent's vectors in the store: a nearest-vector search that reads a
bounded share of a long history instead of every vector (an IVF index, kept in the database).

Once an agent has :data:`LISTS_FROM` vectors of one embedding space, spherical k-means makes
about √n lists of them; each list's centroid is a row of ``recall_vector_lists`` and each
vector row names its list (``recall_vectors.list``). A vector stored later joins the nearest
list at once. When the vectors have doubled, a new *generation* of lists is made from a
sample of all of them, and the vectors stored from then on join its lists; the older vectors
stay where they are, so no vector row (and its vector) is ever rewritten for the lists but
the :data:`LISTS_FROM` of the first generation. A search scores every generation's centroids
and reads the :func:`probes` nearest lists of each, and any vector in no list; the caller adds
the query's lexical candidates, scored exactly. Below :data:`LISTS_FROM` every vector is
scored, exactly.

The functions take a :class:`~.fetch.Sql` (one connection inside a transaction) and
need numpy, as every vector path does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fetch import Sql

LISTS_FROM = 20_000
"""Vectors of one agent and model from which they are searched through lists (at 20,000,
scoring every one takes tens of milliseconds; below, the exact scan is cheap enough)."""
MIN_LISTS = 64
MAX_LISTS = 1_024
GENERATION_IDS = 4_096
"""List ids per generation: generation ``g``'s lists are ``g * 4096 + i``."""
TRAIN_SAMPLE = 32_768
"""Vectors the centroids are trained on (every n-th by id; at most ~50 MB of float32 for
384 dimensions, held only while the lists are made)."""
ROUNDS = 10
"""k-means rounds."""
SAMPLE_CHUNK = 512
"""Sampled vectors fetched by id per statement."""


@dataclass(frozen=True)
class Generation:
    """Lists made at once: from ``made_from`` vectors, ids ``first`` + row of ``centres``."""

    made_from: int
    first: int
    centres: Any


def list_count(vectors: int) -> int:
    """How many lists ``vectors`` vectors are clustered into: about √n, within bounds."""
    return max(MIN_LISTS, min(MAX_LISTS, round(math.sqrt(vectors))))


def probes(lists: int) -> int:
    """How many of ``lists`` lists a search reads: about 2·√lists (24 of 141 lists, 64 of
    1,024), so the share of the history read falls as it grows."""
    return min(lists, max(8, round(2 * math.sqrt(lists))))


def generations(sql: Sql, agent: int, model: str) -> list[Generation]:
    """The agent's ``model`` lists, oldest generation first (none below the threshold)."""
    return _grouped(
        sql.rows(
            "SELECT list, made_from, centroid FROM recall_vector_lists "
            "WHERE agent = ? AND model = ? ORDER BY list",
            (agent, model),
        )
    )


def newest(sql: Sql, agent: int, model: str) -> Generation | None:
    """The agent's newest generation of ``model`` lists, the one new vectors join (None below
    the threshold): only its centroids are read."""
    made = _grouped(
        sql.rows(
            "SELECT list, made_from, centroid FROM recall_vector_lists "
            "WHERE agent = ? AND model = ? AND made_from = (SELECT max(made_from) "
            "FROM recall_vector_lists WHERE agent = ? AND model = ?) ORDER BY list",
            (agent, model, agent, model),
        )
    )
    return made[0] if made else None


def _grouped(rows: Sequence[tuple[Any, ...]]) -> list[Generation]:
    """``(list, made_from, centroid)`` rows in list order, as generations."""
    import numpy as np

    out: list[Generation] = []
    at = 0
    while at < len(rows):
        first, made_from = int(rows[at][0]), int(rows[at][1])
        end = at
        while end < len(rows) and int(rows[end][1]) == made_from:
            end += 1
        flat = np.frombuffer(b"".join([r[2] for r in rows[at:end]]), dtype=np.float32)
        out.append(Generation(made_from, first, flat.reshape(end - at, -1)))
        at = end
    return out


def matrix(rows: Sequence[tuple[Any, ...]]) -> Any:
    """The float32 vectors of ``(id, bytes)`` rows, one per row."""
    import numpy as np

    flat = np.frombuffer(b"".join([r[1] for r in rows]), dtype=np.float32)
    return flat.reshape(len(rows), -1)


def nearest_lists(generation: Generation, vectors: Any) -> list[int]:
    """The list of each row of ``vectors`` (float32): its nearest centroid of ``generation``."""
    import numpy as np

    return [generation.first + int(i) for i in np.argmax(vectors @ generation.centres.T, axis=1)]


def to_probe(made: Sequence[Generation], query: bytes) -> list[int]:
    """The lists a search for ``query`` reads: of each generation, its nearest ones."""
    import numpy as np

    vector = np.frombuffer(query, dtype=np.float32)
    out: list[int] = []
    for generation in made:
        scores = generation.centres @ vector
        count = probes(len(scores))
        best = np.argpartition(-scores, count - 1)[:count]
        out.extend(generation.first + int(i) for i in best[np.argsort(-scores[best])])
    return out


def due(sql: Sql, agent: int, model: str, latest: Generation | None) -> int | None:
    """The agent's ``model`` vector count when a generation of lists is due: it reached
    :data:`LISTS_FROM` with none, or doubled since the ``latest``; else None."""
    floor = LISTS_FROM if latest is None else 2 * latest.made_from
    count = count_up_to(sql, agent, model, floor)
    return count if count >= floor else None


def count_up_to(sql: Sql, agent: int, model: str, bound: int) -> int:
    """The agent's ``model`` vectors counted up to ``bound`` (the count stops there: a long
    history pays for no full count)."""
    (count,) = sql.rows(
        "SELECT count(*) FROM (SELECT 1 FROM recall_vectors WHERE agent = ? AND model = ? "
        "LIMIT ?) v",
        (agent, model, bound),
    )[0]
    return int(count)


def sample(sql: Sql, agent: int, model: str, vectors: int) -> Any:
    """Every n-th of the agent's ``model`` vectors by id, at most about :data:`TRAIN_SAMPLE`:
    the ids are read off the index, then only the sampled vectors."""
    import numpy as np

    step = max(1, vectors // TRAIN_SAMPLE)
    picked: list[int] = []
    last, seen = -(2**63), 0
    while ids := sql.rows(
        "SELECT doc FROM recall_vectors WHERE agent = ? AND model = ? AND doc > ? "
        "ORDER BY doc LIMIT ?",
        (agent, model, last, 8 * SAMPLE_CHUNK),
    ):
        picked.extend(int(r[0]) for r in ids[(-seen) % step :: step])
        seen += len(ids)
        last = int(ids[-1][0])
    parts = []
    for at in range(0, len(picked), SAMPLE_CHUNK):
        wanted = picked[at : at + SAMPLE_CHUNK]
        rows = sql.rows(
            f"SELECT doc, vector FROM recall_vectors WHERE doc IN ({','.join('?' * len(wanted))})",
            wanted,
        )
        parts.append(matrix(rows))
    return np.concatenate(parts) if parts else np.empty((0, 0), dtype=np.float32)


def add_generation(sql: Sql, agent: int, model: str, made_from: int, centres: Any) -> bool:
    """Store a generation of lists made from ``made_from`` vectors (false, nothing stored,
    when it is no longer due: another writer made one meanwhile; or when ``centres`` is
    empty), and put every vector in no list yet (the threshold's vectors, for the first) in
    its nearest list."""
    latest = newest(sql, agent, model)
    floor = LISTS_FROM if latest is None else latest.made_from + 1
    if made_from < floor or not len(centres):
        return False
    first = 0 if latest is None else latest.first + GENERATION_IDS
    sql.many(
        "INSERT INTO recall_vector_lists (agent, model, list, made_from, centroid) "
        "VALUES (?, ?, ?, ?, ?)",
        [(agent, model, first + i, made_from, c.tobytes()) for i, c in enumerate(centres)],
    )
    made = Generation(made_from, first, centres)
    last = -(2**63)
    while rows := sql.rows(
        "SELECT doc, vector FROM recall_vectors WHERE agent = ? AND model = ? AND list IS NULL "
        "AND doc > ? ORDER BY doc LIMIT ?",
        (agent, model, last, SAMPLE_CHUNK * 8),
    ):
        sql.many(
            "UPDATE recall_vectors SET list = ? WHERE doc = ?",
            [
                (at, int(r[0]))
                for at, r in zip(nearest_lists(made, matrix(rows)), rows, strict=True)
            ],
        )
        last = int(rows[-1][0])
    return True


def train(sample: Any, lists: int, rounds: int = ROUNDS) -> Any:
    """Spherical k-means: ``lists`` unit centroids of the rows of ``sample`` (float32), seeded
    from evenly spaced rows (deterministic); a list left empty is seeded again from the row
    farthest from its centroid. A damaged row (not finite) is left out; no finite row, no
    centroid."""
    import numpy as np

    sample = sample[np.isfinite(sample).all(axis=1)] if len(sample) else sample
    lists = min(lists, len(sample))
    if not lists:
        return np.empty((0, sample.shape[1] if sample.ndim == 2 else 0), dtype=np.float32)
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
