"""Token estimation: the original heuristic (fewer chars per token for CJK) and an exact counter.

Everything that caps prompt text by tokens takes a :class:`TokenEstimator`. The default is
:func:`default_estimator`: the exact ``o200k_base`` counter when the optional ``toktok-rs``
package is installed (extra ``[tokens]``; vocabularies are compiled in, nothing is downloaded),
otherwise the heuristic ``chars / (4 − 2.5·cjk_ratio)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Protocol, runtime_checkable

from .errors import ExtraNotInstalledError

_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x3000, 0x303F),
    (0xFF00, 0xFFEF),
    (0x2E80, 0x2EFF),
    (0x3100, 0x312F),
    (0x31A0, 0x31BF),
    (0xFE30, 0xFE4F),
)
_CJK = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES) + "]")


@runtime_checkable
class TokenEstimator(Protocol):
    """Counts (or estimates) the tokens of a text."""

    name: str

    def count(self, text: str) -> int: ...


def cjk_ratio(text: str) -> float:
    """Share of characters in the CJK ranges the original counts (no kana, no hangul)."""
    if not text:
        return 0.0
    return len(_CJK.findall(text)) / len(text)


class HeuristicEstimator:
    """The original estimate: ``ceil(ceil(len / (4 − 2.5·cjk_ratio)) × calibration)``."""

    name = "heuristic"

    def __init__(self, calibration: float = 1.0) -> None:
        self.calibration = min(max(calibration, 0.5), 2.0)

    def count(self, text: str) -> int:
        if not text:
            return 0
        chars_per_token = 4 - 2.5 * cjk_ratio(text)
        return math.ceil(math.ceil(len(text) / chars_per_token) * self.calibration)


class ExactEstimator:
    """Exact OpenAI BPE counts through ``toktok-rs`` (identical to tiktoken, fully offline)."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        try:
            import toktok
        except ImportError:
            raise ExtraNotInstalledError("tokens", "toktok-rs") from None
        self._count: Callable[[list[str], str], list[int]] = toktok.batch_count
        self.encoding = encoding
        self.name = f"toktok:{encoding}"
        self._count(["probe"], encoding)  # an unknown encoding fails here, not mid-prompt

    def count(self, text: str) -> int:
        return self._count([text], self.encoding)[0] if text else 0


@lru_cache(maxsize=1)
def default_estimator() -> TokenEstimator:
    """The exact counter when ``toktok-rs`` works here, else the original heuristic."""
    try:
        return ExactEstimator()
    except (ExtraNotInstalledError, KeyError, RuntimeError, OSError):
        return HeuristicEstimator()


def largest_prefix_within(
    text: str, max_tokens: int, max_chars: int, estimator: TokenEstimator
) -> str:
    """The longest prefix of ``text`` with at most ``max_chars`` chars and ``max_tokens`` tokens."""
    if max_tokens <= 0 or max_chars <= 0:
        return ""
    candidate = text[:max_chars]
    if estimator.count(candidate) <= max_tokens:
        return candidate
    lo, hi = 0, len(candidate)  # invariant: prefix lo fits, prefix hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if estimator.count(candidate[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid
    return candidate[:lo]
