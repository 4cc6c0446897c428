"""The original Markus keyword search (REFERENCE §6.1-6.2), the baseline of the benchmark."""

from __future__ import annotations

import unicodedata


def tokenize(query: str) -> list[str]:
    """§6.1: lower-case, split on runs of chars not letter/number/_/+/-, drop <2 and dups."""
    pieces: list[str] = []
    current: list[str] = []
    for ch in query.lower():
        if unicodedata.category(ch)[0] in "LN" or ch in "_+-":
            current.append(ch)
        elif current:
            pieces.append("".join(current))
            current = []
    if current:
        pieces.append("".join(current))
    seen: dict[str, None] = {}
    for piece in pieces:
        piece = piece.strip()
        if len(piece) >= 2:
            seen.setdefault(piece, None)
    return list(seen)


def score(haystack: str, tokens: list[str], full_query_lower: str) -> int:
    """§6.2: substring hits per token, plus len(tokens) when the whole query occurs verbatim."""
    if not tokens:
        return 0
    hay = haystack.lower()
    value = sum(1 for token in tokens if token in hay)
    full = full_query_lower.strip().lower()
    if len(full) >= 2 and full in hay:
        value += len(tokens)
    return value


def search(texts: list[str], query: str) -> list[int]:
    """Positions of texts with score > 0, best first, ties in original order (stable sort)."""
    tokens = tokenize(query)
    if not tokens:
        return []
    full = query.strip().lower()
    scored = [(score(text, tokens, full), position) for position, text in enumerate(texts)]
    return [position for value, position in sorted(scored, key=lambda s: -s[0]) if value > 0]
