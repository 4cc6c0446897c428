"""Stored transcript vectors behave the same on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from markus_memory.search.conversation import ConversationIndex, RankingOptions, Turn
from markus_memory.search.embedders import FakeEmbedder
from markus_memory.search.transcript_vectors import (
    TranscriptVectors,
    TranscriptVectorStore,
    model_key,
    text_digest,
)
from tests.storage.pg import postgres_schema_url

np = pytest.importorskip("numpy")

TURNS = [
    Turn("s1", 0, "user", "We went camping by the lake."),
    Turn("s1", 1, "assistant", "Did you see any herons?"),
    Turn("s2", 0, "user", "My tax return is due soon."),
]
Opener = Callable[[str], TranscriptVectors]


@pytest.fixture(params=["sqlite", "postgres"])
def open_vectors(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[TranscriptVectors] = []
    if request.param == "sqlite":

        def lite(agent: str) -> TranscriptVectors:
            opened.append(TranscriptVectorStore(tmp_path / "data.db", agent))
            return opened[-1]

        yield lite
    else:
        from markus_memory.search.pg_transcript_vectors import PostgresTranscriptVectorStore

        with postgres_schema_url() as url:

            def pg(agent: str) -> TranscriptVectors:
                opened.append(PostgresTranscriptVectorStore(url, agent))
                return opened[-1]

            yield pg
            for store in opened:
                store.close()
            opened.clear()
    for store in opened:
        store.close()


class Counting(FakeEmbedder):
    def __init__(self, dimension: int = 32) -> None:
        super().__init__(dimension)
        self.texts: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().embed(texts)


def build(store: TranscriptVectors, embedder: FakeEmbedder) -> ConversationIndex:
    index = ConversationIndex(
        embedder=embedder, options=RankingOptions(vector_weight=1.0), vector_store=store
    )
    index.add(TURNS)
    return index


def test_vectors_are_reused_replaced_on_model_change_and_kept_per_agent(
    open_vectors: Opener,
) -> None:
    first = Counting()
    build(open_vectors("alice"), first)
    assert len(first.texts) == 3
    second = Counting()
    store = open_vectors("alice")
    index = build(store, second)
    assert second.texts == []
    assert index.search("lake camping", limit=1)[0].turn.index == 0
    assert store.count(model_key(second.model, 32)) == 3
    wider = Counting(48)
    build(store, wider)
    assert len(wider.texts) == 3
    assert store.count() == 3 and store.count(model_key(wider.model, 48)) == 3
    again = Counting(48)
    ConversationIndex(embedder=again, vector_store=store).add(
        [Turn("s1", 0, "user", "A completely new text."), *TURNS[1:]]
    )
    assert again.texts == ["A completely new text."]
    bob = open_vectors("bob")
    assert bob.count() == 0
    assert bob.load(model_key(wider.model, 48), 48, [("s1", 1, text_digest(TURNS[1].text))]) == {}


def test_recall_keeps_vectors_on_postgres_when_a_url_is_set(tmp_path: Path) -> None:
    import psycopg

    from markus_memory.config import Settings
    from markus_memory.memory import open_agent

    with postgres_schema_url() as url:
        settings = Settings(home=tmp_path, database_url=url)
        with open_agent("alice", settings=settings, embedder=FakeEmbedder()) as mem:
            session = mem.sessions.get_or_create("chat_1")
            mem.sessions.append(session.id, {"role": "user", "content": "camping at the lake"})
            mem.sessions.append(session.id, {"role": "assistant", "content": "tax return"})
            assert mem.recall_conversation("lake camping", limit=1)[0].index == 0
        with psycopg.connect(url) as conn:
            stored = conn.execute("SELECT count(*) FROM transcript_vectors").fetchone()
        assert stored is not None and stored[0] == 2
        assert not (tmp_path / "data.db").exists()
