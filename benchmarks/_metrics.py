"""Retrieval metrics over ranked dia_id lists: recall_any/all@k, NDCG@10, latency percentiles."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

KS = (1, 5, 10, 20)


def ndcg(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    gains = sum(1 / math.log2(i + 2) for i, item in enumerate(ranked[:k]) if item in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return gains / ideal if ideal else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def summarize(
    results: Sequence[tuple[int, Sequence[str], set[str]]], latencies_ms: Sequence[float]
) -> dict[str, object]:
    """``results`` holds (category, ranked dia_ids, evidence) per question."""
    out: dict[str, object] = {"questions": len(results)}
    for k in KS:
        out[f"recall_any@{k}"] = _mean([float(bool(set(r[:k]) & ev)) for _, r, ev in results if ev])
        out[f"recall_all@{k}"] = _mean([float(ev <= set(r[:k])) for _, r, ev in results if ev])
    out["ndcg@10"] = _mean([ndcg(r, ev) for _, r, ev in results if ev])
    per_category: dict[str, float] = {}
    for category in sorted({c for c, _, _ in results}):
        rows = [(r, ev) for c, r, ev in results if c == category and ev]
        per_category[str(category)] = _mean([float(bool(set(r[:10]) & ev)) for r, ev in rows])
    out["recall_any@10_by_category"] = per_category
    out["latency_median_ms"] = statistics.median(latencies_ms) if latencies_ms else 0.0
    out["latency_p95_ms"] = percentile(latencies_ms, 0.95)
    return out


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0
