"""The markdown layers' own tests, re-run with their documents in PostgreSQL.

Each test below is imported from its module and collected here again, where the ``kf``, ``nb``
and ``state`` fixtures hand out layers on :class:`PostgresDocuments` (a fresh agent in the run's
private schema). Tests that look at files on disk stay file-only; the rest prove that caps,
eviction and pruning behave the same on either store.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from markus_memory._docs import DocumentStore
from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits
from markus_memory.errors import InvalidInputError
from markus_memory.layers.knowledge import KnowledgeFile
from markus_memory.layers.notebook import Notebook
from markus_memory.layers.state import StateFile
from tests.postgres_support import new_agent_id, postgres_url

from .conftest import FakeClock
from .knowledge_support import StepClock
from .test_knowledge import (
    test_A_knowledge_cap_five_2500_char_sections_fit_and_the_sixth_is_refused,
    test_A_section_no_h2_bleed,
    test_add_observations_merges_skips_duplicates_and_cleans_tags,
    test_B1_update_section_refuses_when_full_and_changes_nothing,
    test_B1_update_section_returns_ok_true_on_a_normal_write,
    test_curated_text_excluding_sections,
    test_filter_by_type_and_limit_returns_the_last_in_order,
    test_replace_and_patch_and_the_append_alias,
    test_section_over_its_cap_is_refused_never_truncated,
)
from .test_notebook import (
    test_eviction_ties_go_to_the_earliest_entry,
    test_evicts_oldest_entry_when_working_memory_exceeds_max,
    test_item16_agent_entries_are_cut_at_the_cap_and_told,
    test_item17_clear_without_key_keeps_system_and_cpp,
    test_item17_explicit_override_converts_but_never_exceeds_four_agents,
    test_system_and_cpp_entries_do_not_count_toward_agent_slots,
    test_updating_keeps_position,
)
from .test_state import (
    test_item37_state_md_has_a_writer_and_a_ttl,
    test_prune_boundary_is_strictly_older_than_ttl,
    test_prune_dates_own_sections_by_their_stamp_not_their_content,
    test_update_writes_the_recommended_section_format,
)

__all__ = [
    "postgres_url",
    "test_A_knowledge_cap_five_2500_char_sections_fit_and_the_sixth_is_refused",
    "test_A_section_no_h2_bleed",
    "test_add_observations_merges_skips_duplicates_and_cleans_tags",
    "test_B1_update_section_refuses_when_full_and_changes_nothing",
    "test_B1_update_section_returns_ok_true_on_a_normal_write",
    "test_curated_text_excluding_sections",
    "test_filter_by_type_and_limit_returns_the_last_in_order",
    "test_replace_and_patch_and_the_append_alias",
    "test_section_over_its_cap_is_refused_never_truncated",
    "test_eviction_ties_go_to_the_earliest_entry",
    "test_evicts_oldest_entry_when_working_memory_exceeds_max",
    "test_item16_agent_entries_are_cut_at_the_cap_and_told",
    "test_item17_clear_without_key_keeps_system_and_cpp",
    "test_item17_explicit_override_converts_but_never_exceeds_four_agents",
    "test_system_and_cpp_entries_do_not_count_toward_agent_slots",
    "test_updating_keeps_position",
    "test_item37_state_md_has_a_writer_and_a_ttl",
    "test_prune_boundary_is_strictly_older_than_ttl",
    "test_prune_dates_own_sections_by_their_stamp_not_their_content",
    "test_update_writes_the_recommended_section_format",
]


@pytest.fixture
def documents(postgres_url: str) -> Iterator[DocumentStore]:
    from markus_memory.storage._postgres.documents import PostgresDocuments

    store = PostgresDocuments(postgres_url, new_agent_id(), lock_timeout=10)
    yield store
    store.close()


@pytest.fixture
def kf(paths: AgentPaths, lock: AgentLock, documents: DocumentStore) -> KnowledgeFile:
    return KnowledgeFile(paths, lock, Limits(), StepClock(), documents=documents)


@pytest.fixture
def nb(
    paths: AgentPaths, lock: AgentLock, limits: Limits, clock: FakeClock, documents: DocumentStore
) -> Notebook:
    return Notebook(paths, lock, limits, clock, documents=documents)


@pytest.fixture
def state(
    paths: AgentPaths, lock: AgentLock, limits: Limits, clock: FakeClock, documents: DocumentStore
) -> StateFile:
    return StateFile(paths, lock, limits, clock, documents=documents)


def test_nothing_lands_on_disk(nb: Notebook, kf: KnowledgeFile, state: StateFile) -> None:
    nb.upsert("k", "v")
    kf.save_observation("o")
    state.update("s", "x")
    assert not nb.path.exists() and not kf.path.exists() and not state.path.exists()
    assert nb.documents.names() == ["NOTEBOOK.md", "knowledge.md", "state.md"]


def test_buffer_keeps_the_newest_max_observations(
    paths: AgentPaths, lock: AgentLock, documents: DocumentStore
) -> None:
    kf = KnowledgeFile(paths, lock, Limits(max_observations=5), StepClock(), documents=documents)
    for i in range(7):
        kf.save_observation(f"n{i}")
    again = KnowledgeFile(paths, lock, Limits(), StepClock(), documents=documents)
    assert [o.content for o in again.observations()] == [f"n{i}" for i in range(2, 7)]


def test_a_refused_write_inside_a_transaction_rolls_back_the_row(
    kf: KnowledgeFile, documents: DocumentStore
) -> None:
    kf.save_observation("kept")
    before = documents.version("knowledge.md")
    with pytest.raises(RuntimeError), documents.lock():
        kf.save_observation("rolled back")
        raise RuntimeError("boom")
    assert [o.content for o in kf.observations()] == ["kept"]
    assert documents.version("knowledge.md") == before


def test_a_nul_character_is_refused_and_nothing_is_written(nb: Notebook) -> None:
    nb.upsert("k", "before")
    with pytest.raises(InvalidInputError, match="NUL"):
        nb.upsert("k", "a\x00b")
    assert nb.get("k").text == "before"  # type: ignore[union-attr]
