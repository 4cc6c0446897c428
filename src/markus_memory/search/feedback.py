"""Pseudo-relevance feedback: the words of the first pass's best turns, as query terms.

A relevance model (RM3): each of the ``top`` best turns of a first ranking lends its content
words in proportion to its score and to their share of the turn; the likeliest words not in
the question are added to the bm25 query at a small weight. Evidence spread over several turns
(a multi-hop question) often shares words with the turn the question finds first but not with
the question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..analysis import STOP_WORDS, query_counts, words

__all__ = ["relevance_model"]


def relevance_model(
    found: Sequence[tuple[str, float]], asked: Mapping[int, int] | set[int]
) -> dict[int, float]:
    """``P(term | relevant)`` of the content terms of ``found`` (text, score: the first pass's
    best turns), by term key, without the terms of the question (``asked``); each turn weighs
    by its share of the scores, each term by its share of the turn's content terms."""
    total = sum(max(score, 0.0) for _, score in found)
    if total <= 0:
        return {}
    model: dict[int, float] = {}
    for text, score in found:
        content = [w for w in words(text) if w not in STOP_WORDS and len(w) > 1]
        counts = query_counts(content)
        length = sum(counts.values())
        if not length:
            continue
        share = max(score, 0.0) / total
        for key, count in counts.items():
            if key not in asked:
                model[key] = model.get(key, 0.0) + share * count / length
    return model
