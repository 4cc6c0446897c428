"""Speaker boost on the fused ranking: a question that names a speaker prefers their turns.

"What did Maria say about the waterfall?" is answered by Maria's reply, which often sits next
to the turn that matched the words (John's question). Applied to the fused scores, after
neighbour and session propagation, the boost reaches that reply too, where a boost inside
bm25 reaches only the turns that matched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from .analysis import words

K = TypeVar("K")


def named_speakers(terms: Iterable[str], speaker_words: set[str]) -> set[str]:
    """The query words that are (part of) a speaker's name."""
    return {term for term in terms if term in speaker_words}


def speaker_boost(
    scores: Mapping[K, float],
    speaker_of: Callable[[K], str | None],
    named: set[str],
    *,
    boost: float,
) -> dict[K, float]:
    """``scores`` with the turns of a named speaker multiplied by ``1 + boost`` (0 is off)."""
    if boost <= 0 or not named:
        return dict(scores)
    factor = 1.0 + boost
    out = {}
    for key, value in scores.items():
        speaker = speaker_of(key)
        out[key] = value * factor if speaker and named & set(words(speaker)) else value
    return out
