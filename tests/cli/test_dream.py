"""dream run / --dry-run / undo / history / diff through the command line."""

from __future__ import annotations

import json

import pytest

from markus_memory import open_agent
from markus_memory.dream import dream_history
from tests.fake_llm_server import Reply, fake_server

from .conftest import Invoke, as_json


def seed() -> str:
    """Observations with duplicates the offline consolidator merges; the file's text."""
    with open_agent("al") as mem:
        for i in range(30):
            mem.knowledge.save_observation(f"fact number {i} about topic {i * 7}")
        mem.knowledge.save_observation("Deploy on Friday.")
        mem.knowledge.save_observation("deploy  on FRIDAY")
        return mem.paths.knowledge.read_text(encoding="utf-8")


def knowledge_text() -> str:
    with open_agent("al") as mem:
        return mem.paths.knowledge.read_text(encoding="utf-8")


def test_dry_run_shows_the_diff_and_writes_nothing(invoke: Invoke) -> None:
    before = seed()
    report = as_json(invoke("dream", "run", "-a", "al", "--dry-run", "--json"))
    assert report["status"] == "dry_run" and report["mode"] == "offline"
    assert len(report["merged"]) == 1 and report["diff"]
    shown = invoke("dream", "run", "-a", "al", "--dry-run").output
    assert "merged 1" in shown and "--- a/knowledge.md" in shown
    assert knowledge_text() == before
    assert as_json(invoke("dream", "history", "-a", "al", "--json")) == []


def test_run_history_diff_and_undo(invoke: Invoke) -> None:
    before = seed()
    report = as_json(invoke("dream", "run", "-a", "al", "--json"))
    assert report["status"] == "applied"
    assert report["observations_after"] == report["observations_before"] - 1
    assert knowledge_text() != before
    (run,) = as_json(invoke("dream", "history", "-a", "al", "--diff", "--json"))
    assert run["run_id"] == report["run_id"] and run["status"] == "applied"
    diff = invoke("dream", "diff", report["run_id"], "-a", "al").output
    assert diff == run["diff"] and "knowledge.md" in diff
    assert report["run_id"] in invoke("dream", "history", "-a", "al").output
    assert "Undid" in invoke("dream", "undo", "-a", "al").output
    assert knowledge_text() == before
    (run,) = as_json(invoke("dream", "history", "-a", "al", "--json"))
    assert run["status"] == "undone"
    result = invoke("dream", "undo", "-a", "al", code=1)
    assert "no applied dream" in result.output


def test_undo_refuses_when_the_file_changed_since(invoke: Invoke) -> None:
    seed()
    invoke("dream", "run", "-a", "al")
    invoke("save", "written after the dream", "-a", "al")
    result = invoke("dream", "undo", "-a", "al", code=1)
    assert "changed since dream" in result.output
    assert "written after the dream" in knowledge_text()


def test_diff_of_an_unknown_run_exits_1(invoke: Invoke) -> None:
    seed()
    invoke("dream", "diff", "dream_nope", "-a", "al", code=1)


def test_llm_needs_a_model_name(invoke: Invoke) -> None:
    seed()
    assert "--model" in invoke("dream", "run", "-a", "al", "--llm", "openai", code=2).output


def test_a_model_that_cannot_be_reached_fails_the_dream_cleanly(invoke: Invoke) -> None:
    before = seed()
    result = invoke(
        "dream",
        "run",
        "-a",
        "al",
        "--llm",
        "openai",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        code=1,
    )
    assert "failed" in result.output and "Traceback" not in result.output
    assert knowledge_text() == before


def test_item19_dream_run_shows_every_refusal_with_its_reason(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed()
    with open_agent("al") as mem:
        ids = [o.id for o in mem.knowledge.observations()]
    plan = {
        "remove": [ids[0], "obs_does_not_exist"],
        "merge": [{"ids": ["obs_nope_1", "obs_nope_2"], "content": "x"}],
    }
    body = {"choices": [{"message": {"content": json.dumps(plan)}}]}
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with fake_server() as server:
        server.replies.append(Reply(body=body))
        out = invoke(
            "dream",
            "run",
            "-a",
            "al",
            "--llm",
            "openai",
            "--model",
            "m",
            "--base-url",
            server.url + "/v1",
            "--dry-run",
        ).output
    refused = [line for line in out.splitlines() if line.startswith("refused ")]
    assert len(refused) >= 2, out
    assert any("obs_does_not_exist" in line for line in refused)
    assert any(line.startswith("refused merge") for line in refused)


def test_item19_llm_without_api_key_refused_before_any_call(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    before = knowledge_text()
    result = invoke("dream", "run", "-a", "al", "--llm", "openai", "--model", "m", code=2)
    assert "OPENAI_API_KEY" in result.output and "Traceback" not in result.output
    result = invoke("dream", "run", "-a", "al", "--llm", "anthropic", "--model", "m", code=2)
    assert "ANTHROPIC_API_KEY" in result.output
    assert knowledge_text() == before
    with open_agent("al") as mem:
        assert dream_history(mem) == []
