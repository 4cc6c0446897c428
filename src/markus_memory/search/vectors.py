"""Embedding vectors of knowledge.md documents: re-embedding on change, cosine top-k with numpy.

Vectors are stored once, in the store, per ``(document, model key)`` next to the BM25 postings
and tied to the document's content digest, so an edited document is re-embedded and a deleted
one disappears with it. A search reads them back in bounded chunks and keeps only the best so
far: no process loads every vector of an agent. The model key is ``<embedder model>:<dimension>``:
changing the model or its dimensions re-embeds everything instead of ever comparing vectors of
two different spaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ExtraNotInstalledError, LLMError
from ..storage.knowledge_index import IndexDoc, KnowledgeIndex
from .embedders import Embedder

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


class KnowledgeVectors(Protocol):
    """Where the knowledge vectors of the agents live and how the nearest are found:
    :class:`StoredVectors` (the store's ``search_vectors``). A vector database (pgvector) can
    stand in by answering the same three calls, finding the nearest itself."""

    def vector_digests(self, agent_id: str, model: str) -> dict[str, str]: ...

    def put_vectors(
        self, agent_id: str, model: str, items: Iterable[tuple[str, str, bytes]]
    ) -> None: ...

    def nearest(
        self,
        agent_id: str,
        model: str,
        query: numpy.ndarray,
        digests: Mapping[str, str],
        limit: int,
    ) -> list[tuple[str, float]]:
        """``(doc_id, cosine)`` best first, at most ``limit``, of the documents in ``digests``
        whose vector was made from the text with that digest."""
        ...


class StoredVectors:
    """:class:`KnowledgeVectors` in the store's knowledge index: read back in bounded chunks
    and scored with numpy, keeping only the best so far (no process holds them all)."""

    def __init__(self, index: KnowledgeIndex) -> None:
        self.index = index

    def vector_digests(self, agent_id: str, model: str) -> dict[str, str]:
        return self.index.vector_digests(agent_id, model)

    def put_vectors(
        self, agent_id: str, model: str, items: Iterable[tuple[str, str, bytes]]
    ) -> None:
        self.index.put_vectors(agent_id, model, items)

    def nearest(
        self,
        agent_id: str,
        model: str,
        query: numpy.ndarray,
        digests: Mapping[str, str],
        limit: int,
    ) -> list[tuple[str, float]]:
        np = _numpy()
        width = 4 * len(query)
        best_ids: list[str] = []
        best = np.zeros(0, dtype=np.float32)
        for chunk in self.index.vector_chunks(agent_id, model):
            rows = [(i, v) for i, d, v in chunk if digests.get(i) == d and len(v) == width]
            if not rows or limit <= 0:
                continue
            matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
            sims = np.concatenate([best, matrix.reshape(len(rows), len(query)) @ query])
            ids = best_ids + [doc_id for doc_id, _ in rows]
            keep = np.argsort(-sims, kind="stable")[:limit]
            best_ids, best = [ids[i] for i in keep], sims[keep]
        return [(doc_id, float(sim)) for doc_id, sim in zip(best_ids, best, strict=True)]


def sync_vectors(
    store: KnowledgeVectors,
    agent_id: str,
    embedder: Embedder,
    docs: Sequence[IndexDoc],
    budget: int | None = None,
) -> bool:
    """Embed documents whose vector is missing or stale (newest first, at most ``budget``)
    and store them; whether every document has its vector now."""
    key = model_key(embedder)
    stored = store.vector_digests(agent_id, key)
    missing = [doc for doc in reversed(docs) if stored.get(doc.id) != doc.digest]
    complete = budget is None or len(missing) <= budget
    if not complete:
        missing = missing[:budget]
    if missing:
        matrix = embed_matrix(embedder, [doc.text for doc in missing])
        store.put_vectors(
            agent_id,
            key,
            ((doc.id, doc.digest, matrix[i].tobytes()) for i, doc in enumerate(missing)),
        )
    return complete
