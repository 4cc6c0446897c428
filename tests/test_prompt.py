"""render_memory_context on a real AgentMemory: profiles, caps, notebook, automatic recall."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory import AgentMemory, Limits, Settings, open_agent
from markus_memory.prompt import (
    KNOWLEDGE_HEADING,
    NOTEBOOK_HEADING,
    RELEVANT_CONTEXT_KEY,
    STATE_HEADING,
    render_memory_context,
)
from markus_memory.tokens import HeuristicEstimator

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
EST = HeuristicEstimator()


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    settings = Settings(home=tmp_path / "home", clock=lambda: NOW)
    with open_agent("agt_prompt", settings=settings) as mem:
        yield mem


def test_empty_memory_renders_nothing(memory: AgentMemory) -> None:
    ctx = render_memory_context(memory, "execute", estimator=EST)
    assert ctx.text == "" and ctx.stable == "" and ctx.volatile == ""


def test_stable_knowledge_first_and_notebook_last(memory: AgentMemory) -> None:
    memory.knowledge.update_section("procedures", "## Deploy\nrun the pipeline")
    memory.knowledge.save_observation("an observation that is never injected")
    memory.notebook.upsert("plan", "step 2 of 5")
    ctx = render_memory_context(memory, "converse", estimator=EST, now=NOW)
    assert ctx.stable.startswith(KNOWLEDGE_HEADING) and "### procedures" in ctx.stable
    assert "### Deploy" in ctx.stable and "run the pipeline" in ctx.stable
    assert ctx.volatile.startswith(NOTEBOOK_HEADING)
    assert ctx.text == ctx.stable + "\n\n" + ctx.volatile
    assert "never injected" not in ctx.text
    assert ctx.text.index(KNOWLEDGE_HEADING) < ctx.text.index(NOTEBOOK_HEADING)


def test_stable_part_does_not_change_with_the_notebook(memory: AgentMemory) -> None:
    memory.knowledge.update_section("lessons", "cache the prefix")
    first = render_memory_context(memory, "execute", estimator=EST)
    memory.notebook.upsert("plan", "changed every turn")
    second = render_memory_context(memory, "execute", estimator=EST)
    assert first.stable == second.stable and first.volatile != second.volatile


def test_notebook_block_shows_every_entry_age_tag_and_budgets(memory: AgentMemory) -> None:
    memory.notebook.upsert("plan", "p" * 120)
    memory.notebook.upsert("triage-decision", "Decision: item 4", managed="system")
    memory.knowledge.update_section("s", "x" * 100)
    later = NOW + timedelta(hours=3)
    block = render_memory_context(memory, "converse", estimator=EST, now=later).volatile
    assert "### plan (3h ago) · 120/6000 chars" in block
    assert "### triage-decision (3h ago) [system] · 16/6000 chars" in block
    assert "1/4 entries of your own used" in block
    curated = len(memory.knowledge.curated_text())
    assert f"{curated}/15000 chars" in block


def test_converse_notebook_is_not_cut_to_800_chars(memory: AgentMemory) -> None:
    """The original's converse profile showed only the first 800 chars of the dynamic blob."""
    for i in range(4):
        memory.notebook.upsert(f"k{i}", f"entry {i} " + "z" * 500)
    block = render_memory_context(memory, "converse", estimator=EST).volatile
    assert all(f"entry {i} " in block for i in range(4)) and len(block) > 2000


def test_A_profile_reflex_omits_knowledge_and_shows_five_state_lines(memory: AgentMemory) -> None:
    memory.knowledge.update_section("procedures", "secret procedure")
    for i in range(7):
        memory.state.update(f"k{i}", f"state {i}")
    ctx = render_memory_context(memory, "reflex", estimator=EST)
    assert "secret procedure" not in ctx.text and KNOWLEDGE_HEADING not in ctx.text
    assert ctx.stable.startswith(STATE_HEADING)
    assert len(ctx.stable.splitlines()) == 1 + 5


def test_item20_reflex_prompt_shows_state_entries(memory: AgentMemory) -> None:
    memory.state.update("focus", "Waiting on review of PR 12")
    stable = render_memory_context(memory, "reflex", estimator=EST).stable
    assert stable.splitlines() == [
        STATE_HEADING,
        "- focus (2026-05-01): Waiting on review of PR 12",
    ]
    assert "# State" not in stable.replace(STATE_HEADING, "") and "<!--" not in stable


def test_state_never_reaches_other_profiles(memory: AgentMemory) -> None:
    memory.state.update("freeze", "no deploys")
    for profile in ("default", "execute", "govern", "converse"):
        assert "no deploys" not in render_memory_context(memory, profile, estimator=EST).text


@pytest.mark.parametrize(("profile", "tokens"), [("execute", 1500), ("converse", 1200)])
def test_A_knowledge_cap_in_the_rendered_block(
    memory: AgentMemory, profile: str, tokens: int
) -> None:
    for i in range(5):
        memory.knowledge.update_section(f"运维{i}", "部署先经过预发布环境的流水线。" * 150)
    ctx = render_memory_context(memory, profile, estimator=EST)
    assert ctx.knowledge_truncated and ctx.knowledge_tokens <= tokens
    assert "memory_search" in ctx.stable  # the truncation hint


def test_unknown_profile_is_refused(memory: AgentMemory) -> None:
    with pytest.raises(ValueError, match="profile"):
        render_memory_context(memory, "dream")


def test_auto_recall_refreshes_and_removes_relevant_context(
    memory: AgentMemory,
) -> None:
    """relevant-context is refreshed every turn, only relevant, removed when stale.

    In the original it added the newest facts regardless of the query and was never cleared.
    """
    memory.knowledge.save_observation("The staging database password rotates on Mondays")
    memory.knowledge.save_observation("Lunch is at noon", type="fact")
    ctx = render_memory_context(
        memory,
        "converse",
        query="when does the password rotate?",
        persist_recall=True,
        estimator=EST,
    )
    entry = memory.notebook.get(RELEVANT_CONTEXT_KEY)
    assert entry is not None and entry.managed == "system"
    assert "rotates on Mondays" in entry.text and "Lunch" not in entry.text
    assert ctx.relevant_context == entry.text
    assert "rotates on Mondays" in ctx.volatile and "[system]" in ctx.volatile
    ctx = render_memory_context(
        memory, "converse", query="xylophone", persist_recall=True, estimator=EST
    )
    assert memory.notebook.get(RELEVANT_CONTEXT_KEY) is None and ctx.relevant_context is None
    render_memory_context(
        memory, "converse", query="password", auto_recall=False, persist_recall=True, estimator=EST
    )
    assert memory.notebook.get(RELEVANT_CONTEXT_KEY) is None


def test_auto_recall_never_matches_on_stop_words(memory: AgentMemory) -> None:
    """ "what is the status page?" shares only "is" and "the" with these: nothing relevant."""
    for fact in ("The deploy is on Friday", "Bob is the team lead", "Paris is the capital"):
        memory.knowledge.save_observation(fact, type="fact")
    for query in ("what is the status page?", "what is it?", "the"):
        ctx = render_memory_context(
            memory, "converse", query=query, persist_recall=True, estimator=EST
        )
        assert ctx.relevant_context is None, query
        assert memory.notebook.get(RELEVANT_CONTEXT_KEY) is None, query
        assert memory.search(query).hits == [], query
    ctx = render_memory_context(memory, "converse", query="who is the team lead?", estimator=EST)
    assert ctx.relevant_context is not None and "Bob" in ctx.relevant_context


def test_auto_recall_skips_what_the_prompt_already_shows(memory: AgentMemory) -> None:
    memory.knowledge.update_section("security", "Rotate the vault token monthly")
    memory.knowledge.save_observation("vault token lives in 1password")
    render_memory_context(
        memory, "execute", query="vault token", persist_recall=True, estimator=EST
    )
    entry = memory.notebook.get(RELEVANT_CONTEXT_KEY)
    assert entry is not None
    assert "1password" in entry.text and "monthly" not in entry.text


def test_auto_recall_is_capped(memory: AgentMemory) -> None:
    for i in range(30):
        memory.knowledge.save_observation(f"deploy note {i}: " + "long detail " * 40)
    render_memory_context(memory, "converse", query="deploy", persist_recall=True, estimator=EST)
    entry = memory.notebook.get(RELEVANT_CONTEXT_KEY)
    assert entry is not None
    assert len(entry.text) <= 1500 and 1 <= len(entry.text.splitlines()) <= 5


def test_item11_render_with_query_writes_nothing(memory: AgentMemory) -> None:
    """#12 item 11: a render with a query wrote a system entry into NOTEBOOK.md."""
    memory.knowledge.save_observation("The staging database password rotates on Mondays")
    memory.notebook.upsert("plan", "rotate the keys")
    before = memory.paths.notebook.read_bytes()
    ctx = render_memory_context(memory, "converse", query="password rotate", estimator=EST, now=NOW)
    assert memory.paths.notebook.read_bytes() == before
    assert memory.notebook.get(RELEVANT_CONTEXT_KEY) is None
    # the prompt still carries the recall, exactly as a persisted refresh would render it
    assert ctx.relevant_context is not None and "rotates on Mondays" in ctx.relevant_context
    assert f"### {RELEVANT_CONTEXT_KEY} (just now) [system]" in ctx.volatile
    persisted = render_memory_context(
        memory, "converse", query="password rotate", persist_recall=True, estimator=EST, now=NOW
    )
    assert persisted.text == ctx.text and persisted.relevant_context == ctx.relevant_context
    assert memory.notebook.get(RELEVANT_CONTEXT_KEY) is not None


def test_item11_a_stale_persisted_recall_is_hidden_not_removed(memory: AgentMemory) -> None:
    memory.notebook.upsert(RELEVANT_CONTEXT_KEY, "- [2026-04-01] an old hit", managed="system")
    before = memory.paths.notebook.read_bytes()
    ctx = render_memory_context(memory, "converse", query="xylophone", estimator=EST)
    assert "an old hit" not in ctx.text and ctx.relevant_context is None
    assert memory.paths.notebook.read_bytes() == before
    kept = render_memory_context(memory, "converse", estimator=EST)
    assert "an old hit" in kept.volatile  # no query: the entry is shown as stored


def test_persist_recall_must_be_a_bool(memory: AgentMemory) -> None:
    with pytest.raises(TypeError, match="persist_recall"):
        render_memory_context(memory, "converse", query="x", persist_recall="yes")  # type: ignore[arg-type]


def test_item11_prompt_command_with_query_writes_nothing(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from markus_memory.cli import cli

    home = tmp_path / "cli"
    with open_agent("al", home=home) as mem:
        mem.knowledge.save_observation("The staging database password rotates on Mondays")
        mem.notebook.upsert("plan", "rotate the keys")
        notebook = mem.paths.notebook
    before = notebook.read_bytes()
    runner = CliRunner()
    args = ["--home", str(home), "prompt", "-a", "al", "--query", "password rotate"]
    shown = runner.invoke(cli, args, catch_exceptions=False)
    assert shown.exit_code == 0 and "rotates on Mondays" in shown.stdout
    assert notebook.read_bytes() == before
    kept = runner.invoke(cli, [*args, "--persist-recall"], catch_exceptions=False)
    assert kept.exit_code == 0 and kept.stdout == shown.stdout
    assert RELEVANT_CONTEXT_KEY in notebook.read_text()


@pytest.mark.parametrize("top_k", [0, 1, 3, 7])
def test_the_settings_top_k_bounds_the_relevant_context(
    tmp_path: Path, top_k: int, caplog: pytest.LogCaptureFixture
) -> None:
    """``Limits.memory_search_top_k`` is how many hits the prompt's recall shows (the
    original's ``memorySearchTopK``; it used to be ignored for a fixed five); 0 shows none,
    without a failed search."""
    limits = replace(Limits(), memory_search_top_k=top_k)
    settings = Settings(home=tmp_path / "home", clock=lambda: NOW, limits=limits)
    with open_agent("agt_top_k", settings=settings) as mem:
        for i in range(10):
            mem.knowledge.save_observation(f"deploy window {i} is on rack r{i}", type="fact")
        ctx = render_memory_context(mem, "converse", query="deploy window rack", estimator=EST)
    assert len((ctx.relevant_context or "").splitlines()) == top_k
    assert not caplog.records
