from __future__ import annotations

from datetime import datetime, timezone

import pytest

from markus_memory.errors import InvalidInputError
from markus_memory.search.recall import ConversationHit, TranscriptRecall, speaker_of
from tests.postgres_support import postgres_url  # noqa: F401

from .test_conversation import T0, backend, new_index, turns  # noqa: F401


def recall(embedder: object = None) -> TranscriptRecall:
    """A recall engine over the dialogue but its last turn, on the current backend."""
    index = new_index()
    index.add(turns()[:-1])
    return TranscriptRecall(lambda: index.store, index.agent_id, embedder=embedder)  # type: ignore[arg-type]


def test_hits_carry_session_index_role_time_text_and_neighbours() -> None:
    hits = recall().recall("support group", limit=1, neighbours=1)
    assert len(hits) == 1
    hit = hits[0]
    assert isinstance(hit, ConversationHit)
    assert (hit.session_id, hit.index, hit.role, hit.speaker) == ("s1", 2, "user", "Caroline")
    assert hit.timestamp is not None and hit.timestamp >= T0
    assert "support group" in hit.text
    assert [t.index for t in hit.before] == [1] and [t.index for t in hit.after] == [3]
    with pytest.raises(AttributeError):
        hit.text = "changed"  # type: ignore[misc]


def test_neighbours_stop_at_session_edges() -> None:
    hit = recall().recall("camping mountains", limit=1, neighbours=2)[0]
    assert (hit.session_id, hit.index) == ("s2", 0)
    assert hit.before == () and [t.index for t in hit.after] == [1, 2]
    assert recall().recall("camping", limit=1, neighbours=0)[0].after == ()


def test_a_new_engine_recalls_what_the_store_holds_without_loading_it() -> None:
    engine = recall()
    assert engine.index.store.recall_stats(engine.agent_id, []).docs == len(turns()) - 1
    assert engine.recall("support group", limit=1)[0].index == 2
    index = engine.index
    index.add(turns()[-1:])
    assert engine.recall("adoption agencies", limit=1)[0].index == 3
    again = TranscriptRecall(lambda: index.store, index.agent_id)
    assert [h.index for h in again.recall("adoption agencies", limit=3)] == [
        h.index for h in engine.recall("adoption agencies", limit=3)
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": ""},
        {"query": "  "},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 51},
        {"query": "x", "limit": True},
        {"query": "x", "neighbours": -1},
        {"query": "x", "neighbours": 6},
        {"query": "x", "role": " "},
        {"query": "x", "since": datetime(2023, 1, 1)},
        {
            "query": "x",
            "since": datetime(2024, 1, 1, tzinfo=timezone.utc),
            "until": datetime(2023, 1, 1, tzinfo=timezone.utc),
        },
    ],
)
def test_bad_arguments_raise_before_searching(kwargs: dict) -> None:
    def never():  # type: ignore[no-untyped-def]
        raise AssertionError("searched")

    with pytest.raises(InvalidInputError):
        TranscriptRecall(never, "a1").recall(**kwargs)


def test_speaker_of_reads_metadata() -> None:
    assert speaker_of({"speaker": " Mel "}) == "Mel"
    assert speaker_of(None) is None and speaker_of({"speaker": 3}) is None
    assert speaker_of({"speaker": "  "}) is None


def test_stored_turns_are_embedded_once() -> None:
    pytest.importorskip("numpy")
    from markus_memory.search.embedders import FakeEmbedder

    embedded: list[str] = []

    class Counting(FakeEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            embedded.extend(texts)
            return super().embed(texts)

    engine = recall(embedder=Counting())
    engine.recall("adoption", limit=1)
    assert len(embedded) == len(turns()) - 1 + 1, "every stored turn once, plus the query"
    engine.index.add(turns()[-1:])
    engine.recall("adoption", limit=1)
    assert len(embedded) == len(turns()) + 2, "only the new turn, plus the query"


def test_a_recall_reads_through_one_connection() -> None:
    engine = recall()
    store = engine.index.store.database  # type: ignore[attr-defined]
    engine.recall("support group", limit=3, neighbours=1)  # warm: vectors, migrations
    opened = 0
    read = store.read  # type: ignore[attr-defined]

    def counted() -> object:
        nonlocal opened
        opened += 1
        return read()

    store.read = counted  # type: ignore[attr-defined]
    try:
        hits = engine.recall("support group", limit=3, neighbours=1)
    finally:
        del store.read  # type: ignore[attr-defined]
    assert hits and opened == 1
