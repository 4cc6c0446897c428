"""The offline consolidator: duplicates merged, unique content never lost, never promotes."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from markus_memory.dream.offline import merged_content, normalise, offline_plan, words_of
from tests.dream.obs import obs


def test_exact_duplicates_after_normalisation_merge() -> None:
    entries = [
        obs(1, "Deploy on Friday."),
        obs(2, "something else entirely"),
        obs(3, "deploy  on FRIDAY"),
    ]
    plan = offline_plan(entries)
    assert plan.promote == () and plan.remove == ()
    assert [m.remove_ids for m in plan.merge] == [("obs_1", "obs_3")]
    assert plan.merge[0].content in ("Deploy on Friday.", "deploy  on FRIDAY")


def test_near_duplicates_keep_every_word() -> None:
    a = "the staging database runs postgres sixteen on port 5433 behind pgbouncer with pooling"
    b = a + " enabled"
    entries = [obs(1, a), obs(2, b), obs(3, "unrelated note about the cat")]
    (merge,) = offline_plan(entries).merge
    assert merge.remove_ids == ("obs_1", "obs_2")
    assert merge.content == b


def test_different_texts_are_left_alone() -> None:
    entries = [obs(i, f"fact number {i} about topic {i * 7}") for i in range(20)]
    assert offline_plan(entries).is_empty


def test_empty_observations_are_removed() -> None:
    plan = offline_plan([obs(1, "  "), obs(2, "real")])
    assert plan.remove == ("obs_1",) and plan.merge == ()


class VectorsByPrefix:
    """A real embedder for tests: texts sharing their first word get the same vector."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] if t.startswith("alpha") else [0.0, 1.0] for t in texts]


def test_embeddings_link_paraphrases_but_content_is_kept() -> None:
    entries = [
        obs(1, "alpha uses blue green deploys"),
        obs(2, "alpha deploys are blue/green style"),
        obs(3, "beta"),
    ]
    assert offline_plan(entries).is_empty
    (merge,) = offline_plan(entries, embedder=VectorsByPrefix()).merge
    assert merge.remove_ids == ("obs_1", "obs_2")
    assert words_of(entries[0].content) | words_of(entries[1].content) <= words_of(merge.content)


def test_normalise() -> None:
    assert normalise("  Hello,   WORLD! ") == "hello world"


words = st.sampled_from("alpha beta gamma delta epsilon zeta eta 1 2 x".split())
texts = st.lists(words, min_size=1, max_size=8).map(" ".join)


@given(st.lists(texts, min_size=1, max_size=30))
def test_no_unique_word_is_ever_lost(contents: list[str]) -> None:
    entries = [obs(i, c) for i, c in enumerate(contents)]
    plan = offline_plan(entries)
    by_id = {e.id: e.content for e in entries}
    seen: set[str] = set()
    for merge in plan.merge:
        assert len(merge.remove_ids) >= 2
        assert not seen & set(merge.remove_ids)
        seen |= set(merge.remove_ids)
        for source in merge.remove_ids:
            assert words_of(by_id[source]) <= words_of(merge.content)
    assert plan.promote == ()


def test_merged_content_prefers_the_longest() -> None:
    assert merged_content(["a b", "a b c", "d"]) == "a b c\n\nd"
    assert merged_content(["same words here", "same words here"]) == "same words here"
