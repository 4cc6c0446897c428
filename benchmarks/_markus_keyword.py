"""The original Markus keyword ranking (OR scoring, phrase bonus) over plain texts: the baseline."""

from __future__ import annotations

from markus_memory.search.keyword import score_haystack, tokenize


def search(texts: list[str], query: str) -> list[int]:
    """Positions of texts with score > 0, best first, ties in original order (stable sort)."""
    tokens = tokenize(query)
    if not tokens:
        return []
    full = query.strip().lower()
    scored = [(score_haystack(text, tokens, full), position) for position, text in enumerate(texts)]
    return [position for value, position in sorted(scored, key=lambda s: -s[0]) if value > 0]
