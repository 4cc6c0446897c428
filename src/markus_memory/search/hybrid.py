"""Rank fusion: combine ranked candidate lists (bm25, vectors) into one ranking."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from ..errors import InvalidInputError

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def rrf(
    rankings: Sequence[Sequence[K]], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> dict[K, float]:
    """Reciprocal rank fusion: ``sum(w / (k + rank))`` over the lists a key is in (1-based)."""
    if weights is not None and len(weights) != len(rankings):
        raise InvalidInputError("one weight per ranking")
    fused: dict[K, float] = {}
    for position, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[position]
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + weight / (k + rank)
    return fused


def normalized(scores: Mapping[K, float]) -> dict[K, float]:
    """Scores scaled by the best one into (0, 1]; an empty or all-zero mapping maps to zeros."""
    if not scores:
        return {}
    top = max(scores.values())
    if top <= 0:
        return {key: 0.0 for key in scores}
    return {key: max(value, 0.0) / top for key, value in scores.items()}


def min_max(scores: Mapping[K, float]) -> dict[K, float]:
    """Scores mapped linearly onto [0, 1] (all equal -> all 1)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high <= low:
        return {key: 1.0 for key in scores}
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def weighted_sum(
    score_maps: Sequence[Mapping[K, float]], weights: Sequence[float]
) -> dict[K, float]:
    """Convex combination of max-normalised score maps (a key absent from a map scores 0 there)."""
    if len(weights) != len(score_maps):
        raise InvalidInputError("one weight per score map")
    fused: dict[K, float] = {}
    for scores, weight in zip(score_maps, weights, strict=True):
        for key, value in normalized(scores).items():
            fused[key] = fused.get(key, 0.0) + weight * value
    return fused


def ranked(scores: Mapping[K, float], tie_break: Mapping[K, int] | None = None) -> list[K]:
    """Keys by score descending; ties by ``tie_break`` ascending when given (stable otherwise)."""
    if tie_break is None:
        return sorted(scores, key=lambda key: -scores[key])
    return sorted(scores, key=lambda key: (-scores[key], tie_break[key]))
