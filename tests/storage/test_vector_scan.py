"""``nearest_in_chunks``: the best ``limit`` of chunked vectors, exactly as a full sort would
rank them (score descending, ties to the older message), each message once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory.storage.recall.vector_scan import nearest_in_chunks

np = pytest.importorskip("numpy")


def blob(*values: float) -> bytes:
    return np.asarray(values, dtype=np.float32).tobytes()


def test_best_first_across_chunks() -> None:
    query = blob(1.0, 0.0)
    chunks = [[(1, blob(0.1, 0.9)), (2, blob(0.9, 0.1))], [(3, blob(0.5, 0.5)), (4, blob(1, 0))]]
    assert [doc for doc, _ in nearest_in_chunks(chunks, query, 3)] == [4, 2, 3]
    scores = [score for _, score in nearest_in_chunks(chunks, query, 4)]
    assert scores == pytest.approx([1.0, 0.9, 0.5, 0.1])


def test_ties_at_the_cut_go_to_the_older_messages() -> None:
    """Identical texts ("ok", "lol") have identical vectors: which of them make the cut must
    not depend on the selection algorithm."""
    query = blob(1.0, 0.0)
    same = blob(0.6, 0.8)
    docs = [17, 3, 11, 5, 29, 2, 23, 7, 13, 19]
    chunks = [[(doc, same) for doc in docs[:6]], [(doc, same) for doc in docs[6:]]]
    chunks.append([(100, blob(1.0, 0.0))])
    assert [doc for doc, _ in nearest_in_chunks(chunks, query, 4)] == [100, 2, 3, 5]


def test_a_message_met_twice_is_scored_once() -> None:
    query = blob(1.0, 0.0)
    chunks = [[(5, blob(1, 0)), (6, blob(0, 1))], [(5, blob(1, 0)), (7, blob(0.7, 0.7))]]
    assert [doc for doc, _ in nearest_in_chunks(chunks, query, 3)] == [5, 7, 6]


def test_empty_chunks_no_chunks_and_no_room() -> None:
    assert nearest_in_chunks([], blob(1, 0), 5) == []
    assert nearest_in_chunks([[(1, blob(1, 0)), (2, blob(0, 1))]], blob(1, 0), 0) == []
    assert nearest_in_chunks([[], [(1, blob(0, 1))], []], blob(1, 0), 5) == [(1, 0.0)]


VALUES = [-1.0, -0.5, 0.0, 0.25, 0.5, 1.0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=60), st.integers(1, 12), st.integers(1, 7))
def test_same_as_a_full_sort(docs: list[int], limit: int, size: int) -> None:
    """Any chunking, repeats and ties included: the first ``limit`` of a full sort by
    (score descending, id ascending), each message once (a message has one vector)."""
    query = blob(1.0, 0.0)
    value = {doc: VALUES[doc * 7 % len(VALUES)] for doc in docs}
    chunks = [
        [(doc, blob(value[doc], 0.0)) for doc in docs[start : start + size]]
        for start in range(0, len(docs), size)
    ]
    expected = sorted(value.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]
    assert nearest_in_chunks(chunks, query, limit) == expected


def test_a_vector_that_scores_nan_is_left_out() -> None:
    """A damaged vector (NaN) has no place in the order: the others are still ranked, and
    the cut is not lost to it."""
    query = blob(1.0, 0.0)
    nan = float("nan")
    chunks = [[(1, blob(nan, 0)), (2, blob(0.5, 0)), (3, blob(nan, nan))], [(4, blob(0.9, 0))]]
    assert [doc for doc, _ in nearest_in_chunks(chunks, query, 2)] == [4, 2]
    assert [doc for doc, _ in nearest_in_chunks(chunks, query, 10)] == [4, 2]
