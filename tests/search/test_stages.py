from __future__ import annotations

import pytest

from markus_memory.search.stages import in_first_person, lift_nearest


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
