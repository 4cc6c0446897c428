"""The benchmarks' vector cache: a text is embedded once per model, across runs."""

from __future__ import annotations

import pytest
from benchmarks._vector_cache import CachedEmbedder, cached

from markus_memory.search.embedders import FakeEmbedder


def test_a_second_run_embeds_nothing_and_returns_the_same_vectors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    inner = FakeEmbedder()
    first = CachedEmbedder(inner, tmp_path)
    vectors = first.embed(["red car", "green garden", "red car"])
    assert (first.misses, first.hits) == (2, 1)
    first.close()
    again = CachedEmbedder(inner, tmp_path)
    calls = inner.calls
    assert again.embed(["green garden", "red car"]) == [vectors[1], vectors[0]]
    assert inner.calls == calls and again.misses == 0
    assert (again.model, again.dimension) == (inner.model, inner.dimension)
    again.close()


def test_another_model_does_not_share_vectors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    CachedEmbedder(FakeEmbedder(8), tmp_path).embed(["red car"])
    other = CachedEmbedder(FakeEmbedder(16), tmp_path)
    assert len(other.embed(["red car"])[0]) == 16
    assert other.misses == 1


@pytest.mark.parametrize("embedder", [None, FakeEmbedder()])
def test_no_directory_or_no_embedder_leaves_it_as_it_was(embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert cached(embedder, None) is embedder
    assert cached(None, tmp_path) is None
