"""The recall SQL gives the same answers on both backends whatever the size of its input."""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timezone

from markus_memory.analysis import analyse, term_key
from markus_memory.storage._sql import COPY_ROWS
from markus_memory.storage.episodic import EpisodicStore
from markus_memory.storage.recall.contract import RecallFilters as Filters
from markus_memory.storage.repos.transcripts import TranscriptMessage

from .conftest import StoreFactory

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
TEXTS = [
    "the lake was cold and the lake was deep",
    "we went camping by the lake",
    "camping gear: tent, stove, lake map",
    "nothing to see here",
    "cold coffee at the camping site",
]


def _fill(store: EpisodicStore, texts: list[str], session: str = "s1") -> None:
    batch = [
        TranscriptMessage("alice", session, i, "user", text, T0, None, None)
        for i, text in enumerate(texts)
    ]
    store.transcripts.import_transcript("alice", session, batch, synced_at=T0)


def test_values_hold_every_row_of_a_long_input(store_factory: StoreFactory) -> None:
    store = store_factory()
    rows = [(f"s{i}", i, -i) for i in range(700)]
    with store.transcripts._recall() as sql:  # type: ignore[attr-defined]
        cte, params = sql.dialect.values(
            "v", [("sid", "text"), ("lo", "integer"), ("hi", "bigint")], rows
        )
        found = sql.rows(f"WITH {cte} SELECT sid, lo, hi FROM v ORDER BY lo", params)
    assert [tuple(r) for r in found] == rows


def test_keys_by_id_and_near_ids_on_long_inputs(store_factory: StoreFactory) -> None:
    store = store_factory()
    texts = [f"turn {i}" for i in range(1_200)]
    texts[7] = "   "  # no text: never a neighbour
    _fill(store, texts)
    _fill(store, ["other session"] * 3, session="s2")
    by_seq = {
        m.seq: i for i, m in store.transcripts.recall_around("alice", [("s1", 0, 1_199)]).items()
    }
    ids = sorted(by_seq.values())
    assert len(ids) == 1_200
    assert (
        sorted(k.id for k in store.transcripts.recall_keys("alice", ids)) == ids
    )  # several chunks
    near = store.transcripts.recall_keys_near("alice", [by_seq[5], by_seq[6], by_seq[20]], 2)
    assert {k.index for k in near} == {3, 4, 5, 6, 8, 18, 19, 20, 21, 22}
    assert {k.session_id for k in near} == {"s1"}
    asked = store.transcripts.recall_keys_near(
        "alice", [by_seq[7]], 1
    )  # an id asked for comes anyway
    assert sorted(k.index for k in asked) == [6, 7, 8]
    every = store.transcripts.recall_keys_near("alice", ids, 1)  # several chunks
    assert {k.id for k in every} == set(ids)


def test_said_gives_each_message_text_and_time_on_long_inputs(
    store_factory: StoreFactory,
) -> None:
    """What the time stage reads: the same text and time as the full message, for the
    agent's own ids only, over several id chunks."""
    store = store_factory()
    batch = [
        TranscriptMessage(
            "alice", "s1", i, "user", f"said {i}", T0.replace(minute=i % 60), None, {"n": i}
        )
        for i in range(1_100)
    ]
    store.transcripts.import_transcript("alice", "s1", batch, synced_at=T0)
    theirs = [TranscriptMessage("bob", "s1", i, "user", "theirs", T0) for i in range(3)]
    store.transcripts.import_transcript("bob", "s1", theirs, synced_at=T0)
    full = store.transcripts.recall_around("alice", [("s1", 0, 1_099)])
    said = store.transcripts.recall_said(
        "alice", [*full, *store.transcripts.recall_around("bob", [("s1", 0, 2)]), -1]
    )
    assert said == {i: (m.content, m.created_at) for i, m in full.items()}
    assert store.transcripts.recall_said("alice", []) == {}


def test_keys_near_ids_pass_the_filters(store_factory: StoreFactory) -> None:
    store = store_factory()
    batch = [
        TranscriptMessage("alice", "s1", i, "user" if i % 2 else "assistant", f"t{i}", T0)
        for i in range(10)
    ]
    store.transcripts.import_transcript("alice", "s1", batch, synced_at=T0)
    by_seq = {m.seq: i for i, m in store.transcripts.recall_around("alice", [("s1", 0, 9)]).items()}
    near = store.transcripts.recall_keys_near("alice", [by_seq[4]], 3, Filters(role="user"))
    assert sorted(k.index for k in near) == [1, 3, 4, 5, 7]  # the asked id, then users only


def _bm25(texts: list[str], terms: list[str]) -> dict[int, float]:
    """FTS5's bm25 over ``texts`` for the index ``terms`` (seq -> score), computed here."""
    docs = [analyse(t) for t in texts]
    avgdl = sum(sum(d.values()) for d in docs) / len(docs)
    out: dict[int, float] = {}
    for term in terms:
        n = sum(1 for d in docs if term in d)
        idf = max(math.log((len(docs) - n + 0.5) / (n + 0.5)), 1e-6)
        for seq, d in enumerate(docs):
            if tf := d.get(term):
                norm = 1.2 * (0.25 + 0.75 * sum(d.values()) / avgdl)
                out[seq] = out.get(seq, 0.0) + idf * tf * 2.2 / (tf + norm)
    return out


def test_rank_scores_are_bm25_for_one_term_and_for_several(store_factory: StoreFactory) -> None:
    store = store_factory()
    _fill(store, TEXTS)
    seq_of = {i: m.seq for i, m in store.transcripts.recall_around("alice", [("s1", 0, 9)]).items()}
    for query in ("camping", "lake cold", "lake camping coffee"):
        terms = list(analyse(query))
        counts = Counter(term_key(t) for t in terms)
        stats = store.transcripts.recall_stats("alice", counts)
        weights = {key: stats.idf(key) * n for key, n in counts.items()}
        ranked, keys = store.transcripts.recall_rank(
            "alice", weights, avgdl=stats.avgdl, per_term=100, limit=10
        )
        assert sorted(k.id for k in keys) == sorted(doc for doc, _ in ranked)
        expected = _bm25(TEXTS, terms)
        assert sorted(seq_of[doc] for doc, _ in ranked) == sorted(expected)
        for doc, score in ranked:
            assert math.isclose(score, expected[seq_of[doc]], rel_tol=1e-9)
        assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)


def test_rank_brings_the_keys_of_the_ranked_and_of_their_neighbours(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    texts = ["lake", "x1", "x2", "x3", "lake lake", "   ", "x6", "lake"]
    batch = [
        TranscriptMessage("alice", "s1", i, "user" if i % 2 else "assistant", text, T0)
        for i, text in enumerate(texts)
    ]
    store.transcripts.import_transcript("alice", "s1", batch, synced_at=T0)
    stats = store.transcripts.recall_stats("alice", [term_key("lake")])
    weights = {term_key("lake"): stats.idf(term_key("lake"))}
    rank = {"avgdl": stats.avgdl, "per_term": 100, "limit": 10}
    alone, keys = store.transcripts.recall_rank("alice", weights, **rank)  # type: ignore[arg-type]
    near, around = store.transcripts.recall_rank("alice", weights, window=2, **rank)  # type: ignore[arg-type]
    assert near == alone and len(alone) == 3
    assert sorted(k.index for k in keys) == [0, 4, 7]
    assert {k.index for k in around} == {0, 1, 2, 3, 4, 6, 7}  # seq 5 has no text
    said, kept = store.transcripts.recall_rank(
        "alice",
        weights,
        window=2,
        filters=Filters(role="assistant"),
        **rank,  # type: ignore[arg-type]
    )
    assert {k.index for k in kept} == {0, 2, 4, 6}  # neighbours pass the filter, as hits
    assert sorted(doc for doc, _ in said) == sorted(k.id for k in kept if k.index in (0, 4))


def test_reads_in_a_recall_session_share_one_connection(store_factory: StoreFactory) -> None:
    store = store_factory()
    with store.transcripts.recall_session():
        with store.transcripts._recall() as first, store.transcripts._recall() as second:  # type: ignore[attr-defined]
            assert first.conn is second.conn
        with store.transcripts.recall_session(), store.transcripts._recall() as nested:  # type: ignore[attr-defined]
            assert nested.conn is first.conn
    assert store.transcripts.recall_stats("alice", [], ["nobody"]).speakers == frozenset()


def test_insert_takes_rows_from_an_iterator_of_any_length(store_factory: StoreFactory) -> None:
    store = store_factory()
    columns = [("a", "bigint"), ("b", "integer")]
    many = [(i, -i) for i in range(COPY_ROWS * 2 + 7)]
    with store.transcripts._recall(write=True) as sql:  # type: ignore[attr-defined]
        sql.run("CREATE TABLE stream_probe (a BIGINT PRIMARY KEY, b INTEGER)")
        sql.insert("stream_probe", columns, iter(()))
        sql.insert("stream_probe", columns, iter(many[:3]))
        sql.insert("stream_probe", columns, (row for row in many[3:]))
        sql.insert(
            "stream_probe",
            columns,
            ((i, 1) for i in range(2)),
            "ON CONFLICT (a) DO UPDATE SET b = excluded.b",
        )
        found = sql.rows("SELECT a, b FROM stream_probe ORDER BY a")
    assert [tuple(r) for r in found] == [(0, 1), (1, 1), *many[2:]]


def test_a_batch_of_many_postings_indexes_as_its_messages_one_by_one(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(words[(i * 7 + j * j) % 40] for j in range(i % 9 + 1)) for i in range(600)]
    texts[5] = "   "
    assert sum(len(set(t.split())) for t in texts) > COPY_ROWS * 2
    at_once = [TranscriptMessage("alice", "s", i, "user", t, T0) for i, t in enumerate(texts)]
    store.transcripts.import_transcript("alice", "s", at_once, synced_at=T0)
    for i, text in enumerate(texts):
        one = TranscriptMessage("bob", "s", i, "user", text, T0)
        store.transcripts.import_transcript("bob", "s", [one], synced_at=T0)
    keys = [term_key(w) for w in words]
    alice, bob = (
        store.transcripts.recall_stats("alice", keys),
        store.transcripts.recall_stats("bob", keys),
    )
    assert (alice.docs, alice.tokens, alice.df) == (bob.docs, bob.tokens, bob.df)
    assert alice.docs == 599 and len(alice.df) == 40

    def ranked(agent: str) -> list[tuple[int, float]]:
        seq = {i: m.seq for i, m in store.transcripts.recall_around(agent, [("s", 0, 600)]).items()}
        weights = {key: alice.idf(key) for key in keys[:3]}
        found, _ = store.transcripts.recall_rank(
            agent, weights, avgdl=alice.avgdl, per_term=1000, limit=600
        )
        return [(seq[doc], score) for doc, score in found]

    assert ranked("alice") == ranked("bob") and len(ranked("alice")) > 100
