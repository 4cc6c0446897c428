"""Claude Code hooks fed recorded hook JSON and a transcript; the Claude Agent SDK session
store through the SDK's own conformance suite (the hooks as processes:
test_claude_code_hooks.py; the installer: test_claude_code_install.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from markus_memory import open_agent
from markus_memory.cli import cli
from markus_memory.config import Limits, Settings
from markus_memory.integrations.claude_code import (
    MarkusSessionStore,
    pre_compact,
    session_id_for,
)
from markus_memory.llm import ChatResponse, ScriptedChatModel, ToolCall

DATA = Path(__file__).parent / "data"
CLAUDE_SESSION = "5f3c2a9e-8d7b-4c61-a0e2-93b1f4d6c7a8"


def hook_input(name: str, transcript: Path | None = None) -> str:
    text = (DATA / name).read_text(encoding="utf-8")
    return text.replace("TRANSCRIPT", str(transcript)) if transcript is not None else text


def test_session_start_prints_the_memory_context_as_additional_context(home: Path) -> None:
    with open_agent("coder", home) as mem:
        mem.knowledge.update_section("project", "Invoices live in Postgres.")
        mem.notebook.upsert("current-task", "migrate the storage module")
    result = CliRunner().invoke(
        cli, ["hook", "session-start", "--agent", "coder"], input=hook_input("session_start.json")
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "Invoices live in Postgres." in context and "migrate the storage module" in context


def test_session_start_shows_the_newest_observations_capped(home: Path) -> None:
    with open_agent("coder", home) as mem:
        for n in range(30):
            mem.knowledge.save_observation(f"observation number {n:02d} " + "detail " * n * 10)
    result = CliRunner().invoke(
        cli, ["hook", "session-start", "--agent", "coder"], input=hook_input("session_start.json")
    )
    assert result.exit_code == 0, result.output
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    block = context[context.index("## Recent Observations") :]
    shown = [line for line in block.splitlines() if line.startswith("- [")]
    assert len(shown) == 20
    assert "observation number 10" in shown[0] and "observation number 29" in shown[-1]
    assert "observation number 09" not in context
    assert all(len(line) < 460 for line in shown) and shown[-1].endswith("…")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MARKUS_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_pre_compact_records_the_transcript_once_and_it_is_recallable(
    home: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((DATA / "claude_transcript.jsonl").read_bytes())
    args = ["hook", "pre-compact", "--agent", "coder"]
    first = CliRunner().invoke(cli, args, input=hook_input("pre_compact.json", transcript))
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("recorded 7 of 7 transcript lines")
    again = CliRunner().invoke(cli, args, input=hook_input("pre_compact.json", transcript))
    assert again.stdout.startswith("recorded 0 of 7 transcript lines")
    with open_agent("coder", home) as mem:
        sid = session_id_for("/home/ana/billing", CLAUDE_SESSION)
        session = mem.sessions.get(sid)
        assert session is not None and len(session.messages) == 7
        roles = [m["role"] for m in session.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
        hits = mem.recall_conversation("invoice numbers January")
        assert hits and "January" in hits[0].text and hits[0].session_id == sid


@pytest.mark.parametrize(
    "stdin",
    [
        "not json",
        "[1, 2]",
        '{"hook_event_name": "SessionStart"}',
        '{"hook_event_name": "PreCompact", "session_id": "s"}',
        '{"hook_event_name": "PreCompact", "session_id": "s", "transcript_path": "/nonexistent"}',
        '{"hook_event_name": "PreCompact", "session_id": 7, "transcript_path": "TRANSCRIPT"}',
    ],
)
def test_bad_hook_input_is_one_line_and_exit_1_and_changes_nothing(
    home: Path, tmp_path: Path, stdin: str
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((DATA / "claude_transcript.jsonl").read_bytes())
    with open_agent("coder", home):
        pass
    before = sorted(str(p) for p in home.rglob("*") if p.suffix != ".lock")
    stdin = stdin.replace("TRANSCRIPT", str(transcript))
    result = CliRunner().invoke(cli, ["hook", "pre-compact", "--agent", "coder"], input=stdin)
    assert result.exit_code == 1
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith("markus-memory PreCompact hook: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert sorted(str(p) for p in home.rglob("*") if p.suffix != ".lock") == before


def test_pre_compact_runs_the_flush_when_a_model_is_configured(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((DATA / "claude_transcript.jsonl").read_bytes())
    settings = Settings.from_env(home=tmp_path / "home")
    settings = dataclasses.replace(settings, limits=Limits(memory_flush_min_messages=4))
    model = ScriptedChatModel(
        [
            ChatResponse(
                "",
                (ToolCall("1", "memory_save", {"content": "Invoice numbers restart in January"}),),
            ),
            "Saved.",
        ]
    )
    hook = json.loads(hook_input("pre_compact.json", transcript))
    with open_agent("coder", settings=settings) as mem:
        report = pre_compact(mem, hook, model)
        assert report.flush is not None and report.flush.ran, report.flush
        assert "invoice numbers restart every january" in json.dumps(model.calls[0][0]).lower()
        assert [o.content for o in mem.knowledge.observations()] == [
            "Invoice numbers restart in January"
        ]


def test_the_session_store_passes_the_sdks_conformance_suite(tmp_path: Path) -> None:
    conformance = pytest.importorskip("claude_agent_sdk.testing")
    counter = itertools.count()
    handles = []

    def make() -> MarkusSessionStore:
        handles.append(open_agent(f"sdk{next(counter)}", tmp_path))
        return MarkusSessionStore(handles[-1])

    try:
        asyncio.run(conformance.run_session_store_conformance(make))
    finally:
        for handle in handles:
            handle.close()


def test_the_session_store_feeds_recall_and_dedupes_by_uuid(tmp_path: Path) -> None:
    lines = [
        json.loads(line) for line in (DATA / "claude_transcript.jsonl").read_text().splitlines()[:7]
    ]
    key = {"project_key": "-home-ana-billing", "session_id": CLAUDE_SESSION}
    with open_agent("coder", tmp_path) as mem:
        store = MarkusSessionStore(mem)
        asyncio.run(store.append(key, lines[:4]))
        asyncio.run(store.append(key, lines[2:]))  # a retried batch overlaps
        assert asyncio.run(store.load(key)) == lines
        assert mem.recall_conversation("Postgres psycopg pool")
