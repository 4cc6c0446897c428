"""The Claude Code recording hooks run as Claude Code runs them (a process, the hook's JSON on
stdin, a real JSONL transcript): every line recorded once whichever hook runs and however
often, garbage changes nothing, a bad line never stops the others."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.integrations.claude_code import session_id_for

from ..postgres_support import new_agent_id, postgres_url
from .claude_support import (
    EVENTS,
    PROJECT,
    SESSION,
    hook_json,
    line,
    lines,
    run,
    tree,
    write_transcript,
)

__all__ = ["postgres_url"]  # the fixture, imported for the tests that use it

SID = session_id_for(PROJECT, SESSION)


def stored(home: Path, agent: str = "coder", url: str | None = None) -> list[str]:
    """The uuid of every message the store holds for the session, in order."""
    with open_agent(agent, settings=settings_for(home, url)) as mem:
        mem.catch_up_transcripts()
        held = mem.store.transcripts.transcript_messages(agent, session_id=SID)
    return [m.metadata["claude_code"]["entry"]["uuid"] for m in held if m.metadata]


def settings_for(home: Path, url: str | None = None) -> Settings:
    return dataclasses.replace(Settings.from_env(home=home), database_url=url)


def record(
    event: str, transcript: Path, home: Path, agent: str = "coder", **env: str
) -> subprocess.CompletedProcess[str]:
    name = {v: k for k, v in EVENTS.items()}[event]
    return run(["hook", name, "--agent", agent], hook_json(event, transcript), home, **env)


def test_6000_lines_fed_four_times_through_different_hooks_store_6000(tmp_path: Path) -> None:
    home, transcript = tmp_path / "home", tmp_path / "t.jsonl"
    rows = lines(6000)
    write_transcript(transcript, rows[:2500])  # a Stop mid-session, before the file grew
    first = record("Stop", transcript, home)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("recorded 2500 of 2500 transcript lines")
    write_transcript(transcript, rows)
    results = [record(e, transcript, home) for e in ("PreCompact", "Stop", "SessionEnd")]
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    assert results[0].stdout.startswith("recorded 3500 of 6000")
    assert all(r.stdout.startswith("recorded 0 of 6000") for r in results[1:])
    again = record("PreCompact", transcript, home)
    assert again.stdout.startswith("recorded 0 of 6000"), again.stdout
    assert stored(home) == [r["uuid"] for r in rows]


def test_a_session_that_ends_before_compacting_is_recorded_by_session_end(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    transcript = write_transcript(tmp_path / "t.jsonl", lines(12))
    result = record("SessionEnd", transcript, home)
    assert result.returncode == 0 and result.stderr == ""
    assert len(stored(home)) == 12
    with open_agent("coder", home) as mem:
        hits = mem.recall_conversation("answer 11 invoices Postgres")
        assert hits and hits[0].session_id == SID


GARBAGE = [
    "not json",
    "[1, 2]",
    '"a string"',
    "{" * 5000,
    json.dumps({"hook_event_name": "SessionStart", "session_id": SESSION}),
    json.dumps({"session_id": SESSION, "transcript_path": "/nonexistent/t.jsonl"}),
    json.dumps({"session_id": SESSION, "transcript_path": "DIRECTORY"}),
    json.dumps({"session_id": 7, "transcript_path": "TRANSCRIPT"}),
    json.dumps({"transcript_path": "TRANSCRIPT"}),
]


@pytest.mark.parametrize("event", sorted(EVENTS.values()))
@pytest.mark.parametrize("stdin", GARBAGE)
def test_garbage_on_stdin_changes_nothing(tmp_path: Path, event: str, stdin: str) -> None:
    home = tmp_path / "home"
    transcript = write_transcript(tmp_path / "t.jsonl", lines(4))
    stdin = stdin.replace("TRANSCRIPT", str(transcript)).replace("DIRECTORY", str(tmp_path))
    for existing in (False, True):
        if existing:
            with open_agent("coder", home):
                pass
        before = tree(home)
        name = {v: k for k, v in EVENTS.items()}[event]
        result = run(["hook", name, "--agent", "coder"], stdin, home)
        assert result.returncode == 1
        assert result.stdout == "" and "Traceback" not in result.stderr
        assert result.stderr.startswith(f"markus-memory {event} hook: ")
        assert len(result.stderr.strip().splitlines()) == 1
        assert tree(home) == before


def test_a_bad_command_line_exits_1_never_2_which_would_block_claude(tmp_path: Path) -> None:
    result = run(["hook", "stop", "--no-such-option"], "{}", tmp_path / "home")
    assert result.returncode == 1 and "no such option" in result.stderr.lower()
    assert not (tmp_path / "home").exists()


LOG = "ERROR connection reset\n" * 120_000  # a ~2.6 MB log pasted into the prompt


def bad_lines_transcript(path: Path) -> tuple[Path, list[str]]:
    """A transcript with every kind of bad line between good ones: the file and the uuids that
    must be stored (two of them shortened)."""
    pasted, huge, tool = line(2), line(10), line(4)
    pasted["message"] = {"role": "user", "content": LOG}  # fits the cap: kept whole
    huge["message"] = {"role": "user", "content": LOG * 2}  # over the 4 MiB cap
    result = {"type": "tool_result", "tool_use_id": "toolu_9", "content": "x" * 4_500_000}
    tool["message"] = {"role": "user", "content": [result]}
    deep = '{"type": "user", "uuid": "deep", "message": ' + "[" * 3000 + "]" * 3000 + "}"
    nan = json.dumps(line(6)).replace('"version": "2.1.3"', '"version": NaN')
    lone = '{"type": "user", "text": "\\ud800 lone"}'
    rows: list[dict[str, object] | str] = [line(0), line(1), pasted, line(3), tool, huge]
    rows += [nan, "{not json", deep, "[1, 2]", line(5), line(7), lone, line(8), line(9)]
    write_transcript(path, rows)
    return path, [line(n)["uuid"] for n in (0, 1, 2, 3, 4, 10, 5, 7, 8, 9)]


def test_bad_lines_never_stop_the_others_and_are_never_stored_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    transcript, keep = bad_lines_transcript(tmp_path / "t.jsonl")
    runs = [record(e, transcript, home) for e in ("PreCompact", "Stop", "SessionEnd", "Stop")]
    assert [r.returncode for r in runs] == [0, 0, 0, 0], runs[0].stderr
    assert runs[0].stdout.startswith(f"recorded {len(keep)} of 15 transcript lines")
    assert "(2 shortened to fit)" in runs[0].stdout
    for result in runs:
        warnings = result.stderr.strip().splitlines()
        assert len(warnings) == 5, result.stderr  # NaN, not JSON, too deep, not an object, lone
        assert all("warning: line" in w for w in warnings)
        assert "NaN" in result.stderr and "nested deeper" in result.stderr
    assert all(r.stdout.startswith("recorded 0 of 15") for r in runs[1:])
    assert stored(home) == keep
    with open_agent("coder", home) as mem:
        session = mem.sessions.get(SID)
        assert session is not None
        data = [m["metadata"]["claude_code"] for m in session.messages]
        assert [d.get("shortened_from_bytes", 0) > 4_000_000 for d in data] == [
            False,
            False,
            False,
            False,
            True,
            True,
            False,
            False,
            False,
            False,
        ]
        assert session.messages[2]["content"] == LOG  # kept whole, once
        text = json.dumps(session.messages, ensure_ascii=False)
        assert "shortened by markus-memory: 5,520,000 characters in all" in text
        assert "shortened by markus-memory: 4,500,000 characters in all" in text


def test_lines_without_a_uuid_are_recorded_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    summary = {"type": "summary", "summary": "Billing setup", "leafUuid": line(1)["uuid"]}
    transcript = write_transcript(tmp_path / "t.jsonl", [summary, *lines(3), summary])
    for event in ("Stop", "Stop", "SessionEnd"):
        assert record(event, transcript, home).returncode == 0
    with open_agent("coder", home) as mem:
        mem.catch_up_transcripts()
        held = mem.store.transcripts.transcript_messages("coder", session_id=SID)
    assert [m.metadata["claude_code"]["entry"]["type"] for m in held if m.metadata] == [
        "summary",
        "user",
        "assistant",
        "user",
    ]


def test_dedupe_reads_the_postgres_store_past_compaction(tmp_path: Path, postgres_url: str) -> None:
    home, agent = tmp_path / "home", new_agent_id()
    rows = lines(2300)  # past the 2,000 messages where the session file compacts
    transcript = write_transcript(tmp_path / "t.jsonl", rows)
    env = {"MARKUS_DATABASE_URL": postgres_url}
    with open_agent(agent, settings=settings_for(home, postgres_url)):
        pass
    for event in ("PreCompact", "Stop", "SessionEnd"):
        result = record(event, transcript, home, agent, **env)
        assert result.returncode == 0, result.stderr
    assert stored(home, agent, postgres_url) == [r["uuid"] for r in rows]
