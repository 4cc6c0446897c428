from __future__ import annotations

import pytest

from markus_memory.search.conversation import ConversationIndex, RankingOptions, Turn
from markus_memory.search.embedders import FakeEmbedder
from markus_memory.search.transcript_vectors import TranscriptVectorStore, model_key, text_digest

np = pytest.importorskip("numpy")

TURNS = [
    Turn("s1", 0, "user", "We went camping by the lake."),
    Turn("s1", 1, "assistant", "Did you see any herons?"),
    Turn("s2", 0, "user", "My tax return is due soon."),
]


class Counting(FakeEmbedder):
    def __init__(self, dimension: int = 32) -> None:
        super().__init__(dimension)
        self.texts: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().embed(texts)


def build(store: TranscriptVectorStore, embedder: FakeEmbedder) -> ConversationIndex:
    index = ConversationIndex(
        embedder=embedder, options=RankingOptions(vector_weight=1.0), vector_store=store
    )
    index.add(TURNS)
    return index


def test_vectors_survive_a_restart_and_are_not_recomputed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    first = Counting()
    build(TranscriptVectorStore(tmp_path / "data.db", "alice"), first).close()
    assert len(first.texts) == 3
    second = Counting()
    store = TranscriptVectorStore(tmp_path / "data.db", "alice")
    index = build(store, second)
    assert second.texts == []
    assert index.search("lake camping", limit=1)[0].turn.index == 0
    assert store.count(model_key(second.model, 32)) == 3


def test_model_change_replaces_vectors_and_never_mixes_dimensions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = TranscriptVectorStore(tmp_path / "data.db", "alice")
    build(store, Counting(32))
    wider = Counting(48)
    index = build(store, wider)
    assert len(wider.texts) == 3
    assert store.count() == 3 and store.count(model_key(wider.model, 48)) == 3
    assert index.search("herons", limit=1)[0].turn.index == 1


def test_changed_text_is_reembedded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = TranscriptVectorStore(tmp_path / "data.db", "alice")
    build(store, Counting())
    again = Counting()
    index = ConversationIndex(embedder=again, vector_store=store)
    index.add([Turn("s1", 0, "user", "A completely new text."), *TURNS[1:]])
    assert again.texts == ["A completely new text."]


def test_agents_have_separate_vectors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    build(TranscriptVectorStore(tmp_path / "data.db", "alice"), Counting())
    bob = TranscriptVectorStore(tmp_path / "data.db", "bob")
    assert bob.count() == 0
    key = model_key("fake-hash-32", 32)
    assert bob.load(key, 32, [("s1", 0, text_digest(TURNS[0].text))]) == {}
