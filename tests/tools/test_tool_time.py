"""The model asks in the agent's present: "yesterday" in a search tool's query is read against
the agent's clock, and a written-out date (ISO, as the tools take them) is understood."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory import AgentMemory, open_agent
from markus_memory.config import Settings
from markus_memory.prompt import relevant_lines
from tests.clocks import FakeClock

from .conftest import call

START = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)  # a Monday


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def memory(tmp_path: Path, clock: FakeClock) -> Iterator[AgentMemory]:
    with open_agent("agt_time", settings=Settings(home=tmp_path / "home", clock=clock)) as mem:
        yield mem


NOTES = [  # one a day from START; the Wednesday note matches the words least well
    "billing deploy finished, billing dashboards green after the deploy",
    "billing deploy finished; billing alerts quiet after the deploy",
    "billing deploy rolled back",
    "billing deploy finished, billing invoices checked after the deploy",
]


def _save_daily(memory: AgentMemory, clock: FakeClock) -> None:
    for note in NOTES:
        call(memory, "memory_save", {"content": note})
        clock.advance(days=1)


def _first(memory: AgentMemory, query: str) -> str:
    result = call(memory, "memory_search", {"query": query})
    return str(result["results"][0]["content"])


def test_memory_search_reads_yesterday_against_the_agents_clock(
    memory: AgentMemory, clock: FakeClock
) -> None:
    _save_daily(memory, clock)
    assert _first(memory, "billing deploy") != "billing deploy rolled back"
    clock.now = datetime(2026, 3, 5, 15, tzinfo=timezone.utc)  # Thursday
    assert _first(memory, "what happened yesterday with the billing deploy?") == NOTES[2]


def test_memory_search_understands_an_iso_date(memory: AgentMemory, clock: FakeClock) -> None:
    _save_daily(memory, clock)
    assert _first(memory, "billing deploy on 2026-03-04") == NOTES[2]


def test_memory_search_without_a_time_ranks_as_before(
    memory: AgentMemory, clock: FakeClock
) -> None:
    _save_daily(memory, clock)
    plain = call(memory, "memory_search", {"query": "billing deploy"})
    library = memory.search("billing deploy")
    assert [r["id"] for r in plain["results"]] == [h.id for h in library.hits]


def test_recall_conversation_reads_yesterday_against_the_agents_clock(
    memory: AgentMemory, clock: FakeClock
) -> None:
    for day, text in enumerate(["We fixed the login bug.", "We fixed the payment bug."]):
        session = f"chat_{day}"
        memory.sessions.get_or_create(session)
        memory.sessions.append(session, {"role": "user", "content": text})
        memory.sessions.append(session, {"role": "assistant", "content": "Great, noted."})
        clock.advance(days=1)
    memory.catch_up_transcripts()
    clock.now = datetime(2026, 3, 3, 18, tzinfo=timezone.utc)
    result = call(memory, "recall_conversation", {"query": "which bug did we fix yesterday?"})
    assert result["results"][0]["content"] == "We fixed the login bug."
    clock.now = datetime(2026, 3, 4, 18, tzinfo=timezone.utc)
    result = call(memory, "recall_conversation", {"query": "which bug did we fix yesterday?"})
    assert result["results"][0]["content"] == "We fixed the payment bug."


def test_the_prompts_relevant_context_reads_yesterday_against_the_agents_clock(
    memory: AgentMemory, clock: FakeClock
) -> None:
    _save_daily(memory, clock)
    clock.now = datetime(2026, 3, 5, 15, tzinfo=timezone.utc)
    lines = relevant_lines(memory, "what happened yesterday with the billing deploy?", max_hits=1)
    assert lines == [f"- [2026-03-04] {NOTES[2]}"]
