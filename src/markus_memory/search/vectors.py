"""Embedding vectors of knowledge.md documents: re-embedding on change, cosine top-k with numpy.

Vectors are stored per ``(document, model key)`` next to the BM25 index and tied to the
document's content digest, so an edited document is re-embedded and a deleted one disappears
with it. The model key is ``<embedder model>:<dimension>``: changing the model or its dimensions
re-embeds everything instead of ever comparing vectors of two different spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ExtraNotInstalledError, LLMError
from .embedders import Embedder
from .index import IndexDoc, KnowledgeIndex

if TYPE_CHECKING:
    import numpy

EMBED_BATCH = 64


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - numpy ships with the test extra
        raise ExtraNotInstalledError("semantic", "numpy") from exc
    return numpy


def model_key(embedder: Embedder) -> str:
    return f"{embedder.model}:{int(embedder.dimension)}"


def embed_matrix(embedder: Embedder, texts: Sequence[str]) -> numpy.ndarray:
    """Unit-length float32 rows for ``texts``; a wrong count or width raises :class:`LLMError`."""
    np = _numpy()
    dims = int(embedder.dimension)
    rows: list[Any] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch = list(texts[start : start + EMBED_BATCH])
        vectors = embedder.embed(batch)
        if len(vectors) != len(batch):
            raise LLMError(
                f"embedder {embedder.model!r} returned {len(vectors)} vectors"
                f" for {len(batch)} texts"
            )
        for vector in vectors:
            if len(vector) != dims:
                raise LLMError(
                    f"embedder {embedder.model!r} returned {len(vector)} dimensions,"
                    f" declared {dims}"
                )
            rows.append(vector)
    matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), dims)
    if not np.all(np.isfinite(matrix)):
        raise LLMError(f"embedder {embedder.model!r} returned a non-finite vector")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: numpy.ndarray = matrix / norms
    return result


class VectorSet:
    """The vectors of one agent's documents under one model, loaded as one matrix."""

    def __init__(self, ids: list[str], matrix: numpy.ndarray, complete: bool = True) -> None:
        self.ids = ids
        self.matrix = matrix
        self.complete = complete

    def top(
        self, query: numpy.ndarray, limit: int, min_similarity: float
    ) -> list[tuple[str, float]]:
        """``(doc_id, cosine)`` best first, at most ``limit``, each ≥ ``min_similarity``."""
        np = _numpy()
        if not self.ids or limit <= 0:
            return []
        sims = self.matrix @ query
        count = min(limit, len(self.ids))
        best = np.argpartition(-sims, count - 1)[:count]
        order = best[np.argsort(-sims[best], kind="stable")]
        return [(self.ids[i], float(sims[i])) for i in order if float(sims[i]) >= min_similarity]


def sync_vectors(
    index: KnowledgeIndex,
    agent_id: str,
    embedder: Embedder,
    docs: Sequence[IndexDoc],
    budget: int | None = None,
) -> VectorSet:
    """Embed documents whose vector is missing or stale (newest first, at most ``budget``),
    store them, and load the set; :attr:`VectorSet.complete` says whether every doc has one."""
    np = _numpy()
    key = model_key(embedder)
    stored = index.vector_digests(agent_id, key)
    missing = [doc for doc in reversed(docs) if stored.get(doc.id) != doc.digest]
    complete = budget is None or len(missing) <= budget
    if not complete:
        missing = missing[:budget]
    if missing:
        matrix = embed_matrix(embedder, [doc.text for doc in missing])
        index.put_vectors(
            agent_id,
            key,
            ((doc.id, doc.digest, matrix[i].tobytes()) for i, doc in enumerate(missing)),
        )
    rows = index.vectors(agent_id, key)
    dims = int(embedder.dimension)
    wanted = {doc.id for doc in docs}
    ids = [doc_id for doc_id, blob in rows if doc_id in wanted and len(blob) == 4 * dims]
    blobs = [blob for doc_id, blob in rows if doc_id in wanted and len(blob) == 4 * dims]
    if not ids:
        return VectorSet([], np.zeros((0, dims), dtype=np.float32), complete)
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), dims)
    return VectorSet(ids, matrix, complete)
