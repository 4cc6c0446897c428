from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory.search.stages import (
    Pool,
    counts_over_sessions,
    in_first_person,
    lift_nearest,
    spread_sessions,
)
from markus_memory.storage.recall.contract import TurnKey


@pytest.mark.parametrize(
    ("query", "named", "embedded"),
    [
        ("What did Melanie paint?", {"melanie"}, "What did I paint?"),
        ("What do Melanie's kids like?", {"melanie"}, "What do my kids like?"),
        ("What do MELANIE\u2019s kids like?", {"melanie"}, "What do my kids like?"),
        ("Did Melanielle call Melanie?", {"melanie"}, "Did Melanielle call I?"),
        ("What did Jon say of Gina's store?", {"jon", "gina"}, "What did Jon say of Gina's store?"),
        ("What did they paint?", set(), "What did they paint?"),
    ],
)
def test_in_first_person_rewrites_one_named_speaker_only(
    query: str, named: set[str], embedded: str
) -> None:
    assert in_first_person(query, named) == embedded


def test_lift_nearest_adds_a_share_of_the_best_score_to_the_top_nearest_only() -> None:
    scores = {1: 2.0, 2: 0.5}
    dense = {1: 0.2, 2: 0.9, 3: 0.8, 4: 0.5, 5: 0.1}
    lifted = lift_nearest(scores, dense, top=3, lift=0.25)
    # the best score is 2.0: the nearest gains 0.5, the third nearest nothing
    assert lifted == pytest.approx({1: 2.0, 2: 1.0, 3: 0.5 * 0.75, 4: 0.0})
    assert 5 not in lifted, "a turn beyond the top nearest gains nothing and is not added"
    assert lift_nearest(scores, dense, top=3, lift=0.0) == scores
    assert lift_nearest(scores, dense, top=0, lift=0.25) == scores
    assert lift_nearest(scores, {}, top=3, lift=0.25) == scores
    assert lift_nearest({}, dense, top=3, lift=0.25) == {}
    assert lift_nearest({7: 1.0}, {7: 0.3}, top=3, lift=0.25) == {7: 1.25}, "one: full lift"


@pytest.mark.parametrize(
    ("query", "counting"),
    [
        ("How many plants did I acquire in the last month?", True),
        ("How much did I spend on gifts for my sister?", True),
        ("What is the total distance I covered, in total?", True),
        ("How many hours did the three trips take combined?", True),
        ("HOW MANY times have I met Alex?", True),
        ("How long has Melanie been practicing art?", False),
        ("What did Caroline paint?", False),
        ("Where did I buy my bookshelf?", False),
        ("Is it much farther than the many others?", False),
    ],
)
def test_a_counting_question_is_told_by_its_words(query: str, counting: bool) -> None:
    assert counts_over_sessions(query) is counting


def _pool(sessions: dict[int, str]) -> Pool:
    keys = {i: TurnKey(i, sid, i, "user", None) for i, sid in sessions.items()}

    def by_id(ids: list[int]) -> list[TurnKey]:
        return [keys[i] for i in ids]

    return Pool(by_id, lambda ids, window: [])


def test_spread_sessions_gives_each_further_turn_of_a_placed_session_less() -> None:
    pool = _pool({1: "a", 2: "a", 3: "a", 4: "b", 5: "c", 6: "d"})
    scores = {1: 1.0, 2: 0.9, 3: 0.85, 4: 0.8, 5: 0.5, 6: 0.9}
    ranked = [1, 2, 3, 4, 5, 6]  # 6 is outside the five reordered: it stays last
    # a1, then b (0.8 against a2's 0.9 * 0.8 = 0.72), a2, then a3 (0.85 * 0.64 = 0.544) and c
    assert spread_sessions(ranked, scores, pool, 0.2, among=5) == [1, 4, 2, 3, 5, 6]
    # at 0.5 c (0.5) comes before a2 (0.45) and a3
    assert spread_sessions(ranked, scores, pool, 0.5, among=5) == [1, 4, 5, 2, 3, 6]
    assert spread_sessions(ranked, scores, pool, 0.0, among=5) == ranked
    assert spread_sessions(ranked, scores, pool, 0.2, among=1) == ranked
    assert spread_sessions([], scores, pool, 0.2, among=5) == []


@settings(deadline=None)
@given(
    st.dictionaries(
        st.integers(0, 30), st.floats(0.001, 100.0, allow_nan=False), min_size=1, max_size=30
    ),
    st.floats(0.01, 0.9),
    st.integers(0, 12),
)
def test_spread_sessions_only_reorders_the_first_places(
    scores: dict[int, float], spread: float, among: int
) -> None:
    pool = _pool({i: f"s{i % 4}" for i in scores})
    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    out = spread_sessions(ranked, scores, pool, spread, among)
    assert sorted(out) == sorted(ranked)
    assert out[0] == ranked[0]
    assert out[among:] == ranked[among:]
    assert set(out[:among]) == set(ranked[:among])
