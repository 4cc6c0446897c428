"""Long turns embedded as several windows (MiniLM reads a text's first 128 tokens)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidInputError
from .embedders import Embedder, Vector

WINDOW_WORDS = 85
"""Words a window holds: about 125 of MiniLM's word pieces in English chat (1.44 a word)."""
MAX_WINDOWS = 3


def windows(text: str, size: int = WINDOW_WORDS, most: int = MAX_WINDOWS) -> list[str]:
    """The texts a turn is embedded as: the turn itself (the embedder reads its beginning),
    then its words from ``size`` on, ``size`` words at a time, up to ``most`` texts in all; a
    tail shorter than a quarter of ``size`` is left out."""
    words = text.split()
    out = [text]
    for start in range(size, len(words), size):
        if len(out) == most or len(words) - start < size // 4:
            break
        out.append(" ".join(words[start : start + size]))
    return out


def embed_windows(embedder: Embedder, texts: Sequence[str], most: int) -> list[Vector]:
    """One vector per text: the mean of its windows' vectors (:func:`windows`, at most
    ``most``), scaled to unit length; a text of one window keeps the embedder's own vector."""
    import numpy as np

    parts = [windows(text, most=max(most, 1)) for text in texts]
    flat = embedder.embed([part for split in parts for part in split])
    if len(flat) != sum(map(len, parts)):
        raise InvalidInputError(
            f"embedder {embedder.model} returned {len(flat)} vectors for {sum(map(len, parts))}"
        )
    out: list[Vector] = []
    start = 0
    for split in parts:
        chunk = flat[start : start + len(split)]
        start += len(split)
        if len(chunk) == 1:
            out.append(chunk[0])
            continue
        mean = np.asarray(chunk, dtype=np.float32).mean(axis=0)
        out.append((mean / max(float(np.linalg.norm(mean)), 1e-12)).tolist())
    return out
