from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory.errors import InvalidInputError
from markus_memory.search.conversation import ConversationIndex, RankingOptions, Turn
from markus_memory.search.embedders import FakeEmbedder
from markus_memory.search.windows import WINDOW_WORDS, embed_windows, windows
from markus_memory.storage._sqlite.store import SqliteStore

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)


class Reads85Words(FakeEmbedder):
    """Reads a text's first 85 words only, as MiniLM reads its first 128 word pieces; every
    text about relaxing or unwinding lands in one direction (a paraphrase bm25 cannot see)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        read = [" ".join(text.split()[:WINDOW_WORDS]) for text in texts]
        calm = ("unwind", "relax")
        return super().embed(["calm" if any(w in t for w in calm) else t for t in read])


def filler(count: int, word: str = "spreadsheet") -> str:
    return " ".join(f"{word}{n % 7}" for n in range(count))


def test_a_short_turn_is_one_window_a_long_one_its_text_then_its_later_words() -> None:
    assert windows("we went camping") == ["we went camping"]
    text = filler(200)
    words = text.split()
    assert windows(text) == [text, " ".join(words[85:170]), " ".join(words[170:])]
    assert windows(text, most=2) == [text, " ".join(words[85:170])]
    assert windows(text, most=1) == [text]
    assert len(windows(filler(85 + 20))) == 1, "a tail under a quarter window is left out"
    assert len(windows(filler(85 + 21))) == 2


def test_a_long_turn_s_vector_holds_what_it_says_after_the_first_window() -> None:
    pytest.importorskip("numpy")
    embedder = Reads85Words()
    long_turn = f"{filler(120)} pottery helps me relax {filler(30, 'budget')}"
    (query,) = embedder.embed(["how do you unwind"])
    (truncated,) = embed_windows(embedder, [long_turn], most=1)
    (windowed,) = embed_windows(embedder, [long_turn], most=3)

    def cosine(a: Sequence[float], b: Sequence[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(query, truncated) == pytest.approx(0.0, abs=1e-6)
    assert cosine(query, windowed) > 0.4
    assert math.isclose(sum(x * x for x in windowed), 1.0, rel_tol=1e-5), "unit length"
    short = "we went camping in the mountains"
    assert embed_windows(embedder, [short], most=3) == embedder.embed([short])


def test_an_embedder_returning_too_few_vectors_for_the_windows_is_refused() -> None:
    class Short(FakeEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return super().embed(texts)[:1]

    with pytest.raises(InvalidInputError, match="returned 1 vectors for 3"):
        embed_windows(Short(), [filler(200)], most=3)


def test_recall_finds_a_long_turn_by_what_it_says_past_the_embedders_reach(
    tmp_path: Path,
) -> None:
    pytest.importorskip("numpy")
    said = [
        ("user", "Work was long today, my boss kept me late at work."),
        ("assistant", f"{filler(120)} after work pottery helps many relax {filler(40, 'tax')}"),
        ("user", "Work has been busy, we have a deadline at work."),
    ]
    history = [
        Turn("s1", n, role, text, T0 + timedelta(minutes=n), None, {"n": n})
        for n, (role, text) in enumerate(said)
    ]
    first = {}
    for most in (1, 3):
        options = RankingOptions(
            fusion="score", vector_weight=1.0, nearest_lift=0.0, windows=most, date_boost=0.0
        )
        store = SqliteStore(tmp_path / f"w{most}.db")
        index = ConversationIndex(store, "agent", embedder=Reads85Words(), options=options)
        index.add(history)
        first[most] = [hit.turn.metadata["n"] for hit in index.search("unwind", limit=1)]
        store.close()
    assert first == {1: [0], 3: [1]}
