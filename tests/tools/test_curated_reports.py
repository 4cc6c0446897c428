"""#28: the curated size is one number everywhere, and a demoted ``## `` line is said.

Before, a write reported the curated part with its trailing newline and ``show``, the prompt
and the UI without it: the totals differed by one. And a ``## `` line in a section's text was
stored as ``### `` with nothing in the result to say so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from markus_memory import open_agent
from markus_memory.cli import cli
from markus_memory.prompt import render_memory_context
from markus_memory.tools import dispatch


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_report_of_the_curated_size_is_the_same_number(isolated_home: Path) -> None:
    with open_agent("al") as mem:
        mem.knowledge.update_section("Team", "Ana leads the platform team.")
        written = mem.knowledge.update_section("Ops", "Deploys run on Fridays.")
        mem.notebook.upsert("plan", "ship the importer")
        size = mem.knowledge.curated_chars()
        prompt = render_memory_context(mem, "default").text
    assert written.curated_chars == size
    shown = re.search(r"Curated knowledge \(knowledge\.md\): (\d+)/", prompt)
    assert shown is not None and int(shown.group(1)) == size
    show = json.loads(_cli("show", "-a", "al", "--json"))
    assert show["knowledge"]["curated_chars"] == size
    edited = _cli("knowledge", "edit", "Ops", "--content", "Deploys run on Fridays.", "-a", "al")
    assert re.search(rf"curated {size}/15000\b", edited), edited


def test_a_demoted_heading_is_said_in_the_result(isolated_home: Path) -> None:
    with open_agent("al") as mem:
        plain = mem.knowledge.update_section("Ops", "Deploys run on Fridays.")
        assert plain.note is None
        result = mem.knowledge.update_section("Ops", "## Rollback\nRevert the tag.", mode="patch")
        assert result.ok and result.note is not None
        assert result.note.startswith("1 line starting with '## ' stored as '### '")
        stored = mem.knowledge.section("Ops")
        assert stored == "Deploys run on Fridays.\n### Rollback\nRevert the tag."
        args = {"section": "Ops", "content": "## A\n## B\nkeep ## this", "mode": "replace"}
        said = json.loads(dispatch(mem, "memory_update", args))
        assert said["status"] == "updated" and said["note"].startswith("2 lines starting with")
        assert mem.knowledge.section("Ops") == "### A\n### B\nkeep ## this"
        quiet = json.loads(dispatch(mem, "memory_update", {"section": "Ops", "content": "x"}))
        assert "note" not in quiet
