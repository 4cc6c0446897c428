from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markus_memory.search.hybrid import min_max, normalized, ranked, rrf, weighted_sum


def test_rrf_sums_reciprocal_ranks_over_lists() -> None:
    fused = rrf([["a", "b"], ["b", "c"]], k=60)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert ranked(fused) == ["b", "a", "c"]


def test_rrf_weights_scale_each_list() -> None:
    fused = rrf([["a"], ["b"]], k=1, weights=[1.0, 3.0])
    assert fused == {"a": 0.5, "b": 1.5}
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[1.0, 2.0])


def test_weighted_sum_normalises_each_map_by_its_best() -> None:
    fused = weighted_sum([{"a": 10.0, "b": 5.0}, {"b": 0.9}], [1.0, 0.5])
    assert fused == {"a": 1.0, "b": 1.0}


def test_min_max_and_normalized_edges() -> None:
    assert min_max({}) == {} and normalized({}) == {}
    assert min_max({"a": 2.0, "b": 2.0}) == {"a": 1.0, "b": 1.0}
    assert min_max({"a": 1.0, "b": 3.0}) == {"a": 0.0, "b": 1.0}
    assert normalized({"a": 0.0, "b": -1.0}) == {"a": 0.0, "b": 0.0}


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.floats(-1e6, 1e6), max_size=20))
def test_normalisations_stay_in_unit_interval(scores: dict[str, float]) -> None:
    for mapped in (min_max(scores), normalized(scores)):
        assert set(mapped) == set(scores)
        assert all(0.0 <= value <= 1.0 + 1e-9 for value in mapped.values())


def test_ranked_breaks_ties_by_given_order() -> None:
    assert ranked({"x": 1.0, "y": 1.0, "z": 2.0}, {"x": 2, "y": 1, "z": 0}) == ["z", "y", "x"]
