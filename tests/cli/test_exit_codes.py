"""Exit codes and output agree with the README; every error is one line (#12 item 22)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner, Result

from markus_memory import open_agent
from markus_memory.cli import cli

from .conftest import Invoke, as_json


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def one_error_line(result: Result) -> str:
    """The single stderr line of a failed command (stdout empty, no traceback)."""
    assert "Traceback" not in result.output, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ") or lines[0].startswith("No "), lines[0]
    return lines[0]


def test_item22_refused_write_exits_1(invoke: Invoke) -> None:
    invoke("init", "-a", "al")
    invoke("notebook", "set", "triage", "decided", "--managed", "system", "-a", "al")
    result = invoke("notebook", "set", "triage", "mine", "-a", "al", code=1)
    assert "managed by the system" in one_error_line(result)
    result = invoke("knowledge", "edit", "big", "--content", "x" * 3001, "-a", "al", code=1)
    assert "Refused" in result.output
    invoke("notebook", "set", "", "v", "-a", "al", code=2)  # malformed: 2


def test_item22_notebook_and_state_clear_of_a_missing_key_alike(invoke: Invoke) -> None:
    invoke("init", "-a", "al")
    invoke("notebook", "set", "task", "ship", "-a", "al")
    invoke("state", "set", "focus", "review", "-a", "al")
    notebook = one_error_line(invoke("notebook", "clear", "nosuch", "-a", "al", code=1))
    state = one_error_line(invoke("state", "clear", "nosuch", "-a", "al", code=1))
    assert notebook == "No notebook entry 'nosuch' (entries: task)."
    assert state == "No state entry 'nosuch' (entries: focus)."
    for layer in ("notebook", "state"):
        result = invoke(layer, "clear", "nosuch", "-a", "al", "--json", code=1)
        assert as_json(result) == {"removed": 0}
    assert invoke("notebook", "clear", "task", "-a", "al").output == "Removed 1 entry.\n"
    assert invoke("state", "clear", "focus", "-a", "al").output == "Removed 1 entry.\n"


EMPTY_LISTINGS = [
    ("notebook", "show"),
    ("knowledge", "show"),
    ("state", "show"),
    ("sessions",),
    ("recall", "activities"),
    ("recall", "conversation", "anything"),
    ("search", "anything"),
    ("search",),
    ("dream", "history"),
]


def test_item22_empty_listings_look_alike(invoke: Invoke) -> None:
    invoke("init", "-a", "al")
    for args in EMPTY_LISTINGS:
        lines = invoke(*args, "-a", "al").output.strip().splitlines()
        assert len(lines) == 2 and lines[1] == "(none)", (args, lines)
    home = invoke("--home", "/nonexistent/markus", "agents").output.strip().splitlines()
    assert home[1].startswith("(none)")


def test_item22_dream_diff_json(invoke: Invoke) -> None:
    with open_agent("al") as mem:
        for text in ("Deploy on Friday.", "deploy  on FRIDAY", "something else"):
            mem.knowledge.save_observation(text)
    report = as_json(invoke("dream", "run", "-a", "al", "--json"))
    shown = as_json(invoke("dream", "diff", report["run_id"], "-a", "al", "--json"))
    assert shown["run_id"] == report["run_id"] and "knowledge.md" in shown["diff"]
    missing = invoke("dream", "diff", "dream_nosuch", "-a", "al", "--json", code=1)
    assert "no dream run" in one_error_line(missing)


@pytest.fixture
def server_url() -> str:
    pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")
    import os

    url = os.environ.get("MARKUS_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("MARKUS_TEST_POSTGRES_URL is not set")
    return url


def test_item22_postgres_failures_are_one_clear_line(invoke: Invoke, server_url: str) -> None:
    invoke("init", "-a", "al")
    base = server_url.rsplit("/", 1)[0]
    cases = {
        f"{base}/markus_no_such_db": "has no database 'markus_no_such_db'",
        "postgresql://postgres@127.0.0.1:1/test": "is unreachable",
        f"{server_url}?options={quote('-csearch_path=markus_no_such_schema')}": "CREATE SCHEMA",
    }
    for url, expected in cases.items():
        for args in (("show", "-a", "al"), ("search", "x", "-a", "al")):
            result = run(*args, env={"MARKUS_DATABASE_URL": url})
            assert result.exit_code == 1, (url, result.output)
            line = one_error_line(result)
            assert expected in line, (url, line)
            assert "unreachable" not in line or expected == "is unreachable"


def test_item22_export_to_a_missing_database_is_one_line(
    invoke: Invoke, server_url: str, tmp_path: Path
) -> None:
    invoke("init", "-a", "al")
    base = server_url.rsplit("/", 1)[0]
    result = run("export", "--to-database-url", f"{base}/markus_no_such_db")
    assert result.exit_code == 1
    assert "has no database" in one_error_line(result)
