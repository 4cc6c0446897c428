from __future__ import annotations

from benchmarks.search_fixture import build
from benchmarks.search_quality import evaluate, rankers


def test_default_search_beats_the_original_keyword_ranking_on_the_labelled_store() -> None:
    fixture = build()
    assert len(fixture.observations) == 500
    assert 14500 <= fixture.curated_chars <= 15000
    by_name = rankers(fixture)
    original = evaluate(fixture, by_name["keyword (original)"])
    default = evaluate(fixture, by_name["MemorySearcher default"])
    assert default.mrr > original.mrr + 0.1
    assert default.hit5 >= original.hit5
