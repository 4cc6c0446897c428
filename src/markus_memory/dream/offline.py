"""The offline consolidator: a dream plan without a model, for machines with no LLM.

It merges exact duplicates (same normalised text) and near-duplicates (nearly the same words,
or nearly the same embedding when an embedder is given) and removes empty observations. It never
promotes and never deletes unique content: a merged entry keeps every word of every source.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Protocol

from ..errors import ExtraNotInstalledError
from .plan import Merge, Plan, tokens
from .prompt import ObservationView

NEAR_DUPLICATE_JACCARD = 0.85
NEAR_DUPLICATE_COSINE = 0.95
_PUNCT = re.compile(r"[^\w\s]+")


class TextEmbedder(Protocol):
    """Anything that turns texts into vectors (the search layer's embedders fit)."""

    def embed(self, texts: Sequence[str]) -> Any: ...


def normalise(text: str) -> str:
    """Lower-case, punctuation removed, whitespace collapsed: equal for trivially equal texts."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def words_of(text: str) -> set[str]:
    """Every word (numbers and short words included): what "unique content" means here."""
    return tokens(text, min_chars=1)


def offline_plan(
    observations: Sequence[ObservationView],
    *,
    embedder: TextEmbedder | None = None,
    max_content_chars: int = 3000,
) -> Plan:
    """Merge groups for (near-)duplicates and removals for empty observations."""
    empty = tuple(o.id for o in observations if not o.content.strip())
    live = [o for o in observations if o.content.strip()]
    parent = list(range(len(live)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        parent[find(i)] = find(j)

    by_text: dict[str, int] = {}
    for i, obs in enumerate(live):
        key = normalise(obs.content)
        if key in by_text:
            union(i, by_text[key])
        else:
            by_text[key] = i
    representatives = sorted(by_text.values())
    for i, j in _near_pairs(live, representatives, embedder):
        union(i, j)
    clusters: dict[int, list[int]] = {}
    for i in range(len(live)):
        clusters.setdefault(find(i), []).append(i)
    merges = []
    for members in clusters.values():
        if len(members) < 2:
            continue
        group = [live[i] for i in members]
        content = merged_content([o.content for o in group])
        if len(content) <= max(max_content_chars, max(len(o.content) for o in group)):
            merges.append(Merge(tuple(o.id for o in group), content))
    return Plan(remove=empty, merge=tuple(merges))


def merged_content(contents: Sequence[str]) -> str:
    """The longest text, then each other text that adds words not yet present."""
    ordered = sorted(range(len(contents)), key=lambda i: (-len(contents[i].strip()), -i))
    parts = [contents[ordered[0]].strip()]
    known = words_of(parts[0])
    for i in ordered[1:]:
        words = words_of(contents[i])
        if not words <= known:
            parts.append(contents[i].strip())
            known |= words
    return "\n\n".join(parts)


def _near_pairs(
    live: Sequence[ObservationView], candidates: Sequence[int], embedder: TextEmbedder | None
) -> list[tuple[int, int]]:
    sets = {i: words_of(live[i].content) for i in candidates}
    # Prefix filtering: order words rarest first; two sets with Jaccard >= t must share one of
    # the first |A| - ceil(t * |A|) + 1 words of each, so only those words are indexed.
    frequency: dict[str, int] = {}
    for words in sets.values():
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
    index: dict[str, list[int]] = {}
    for i in candidates:
        for word in _prefix(sets[i], frequency):
            index.setdefault(word, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for bucket in index.values():
        for a, i in enumerate(bucket):
            for j in bucket[a + 1 :]:
                if (i, j) in pairs:
                    continue
                shared = len(sets[i] & sets[j])
                if shared >= NEAR_DUPLICATE_JACCARD * (len(sets[i]) + len(sets[j]) - shared):
                    pairs.add((i, j))
    if embedder is not None and len(candidates) > 1:
        pairs.update(_embedding_pairs(live, candidates, embedder))
    return sorted(pairs)


def _prefix(words: set[str], frequency: dict[str, int]) -> list[str]:
    ordered = sorted(words, key=lambda w: (frequency[w], w))
    return ordered[: len(ordered) - math.ceil(NEAR_DUPLICATE_JACCARD * len(ordered)) + 1]


def _embedding_pairs(
    live: Sequence[ObservationView], candidates: Sequence[int], embedder: TextEmbedder
) -> list[tuple[int, int]]:
    try:
        import numpy as np
    except ImportError as exc:  # pragma: no cover - embedders need numpy themselves
        raise ExtraNotInstalledError("semantic", "numpy") from exc
    vectors = np.asarray(embedder.embed([live[i].content for i in candidates]), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    similar = np.argwhere(np.triu(unit @ unit.T, k=1) >= NEAR_DUPLICATE_COSINE)
    return [(candidates[int(a)], candidates[int(b)]) for a, b in similar]
