"""The agent id is checked once, at the door, and the legacy migration runs from open_agent, once
(issue #26: the id was validated three times on the way from the CLI to disk, and the
migration ran inside the AgentMemory constructor on every open)."""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory import AgentMemory, InvalidIdError, Settings, _fs, open_agent
from markus_memory import memory as memory_module

from .conftest import Invoke


@pytest.fixture
def agent_checks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every value checked as an agent id from now on (every check of an id, whoever calls
    ``validate_id``, passes through ``_fs._check_common``)."""
    seen: list[object] = []
    original = _fs._check_common

    def counting(kind: str, value: object, max_chars: int) -> str:
        if kind == "agent id":
            seen.append(value)
        return original(kind, value, max_chars)

    monkeypatch.setattr(_fs, "_check_common", counting)
    return seen


def test_a_real_open_and_every_layer_check_the_id_once(
    tmp_path: Path, agent_checks: list[object]
) -> None:
    with open_agent("al", settings=Settings(home=tmp_path)) as mem:
        mem.notebook.upsert("task", "write the report")
        mem.daily_log.write("a day")
        mem.activities.start("review", "read the draft")
        assert mem.activities.search("draft")
    assert agent_checks == ["al"]


def test_a_command_checks_the_id_once_from_argument_to_disk(
    invoke: Invoke, agent_checks: list[object]
) -> None:
    invoke("init", "-a", "al")
    agent_checks.clear()
    invoke("save", "-a", "al", "the report is due friday")
    invoke("show", "-a", "al")
    assert agent_checks == ["al", "al"]  # one per command


def test_a_malformed_id_is_still_refused_at_the_door(tmp_path: Path) -> None:
    with pytest.raises(InvalidIdError):
        open_agent("a\u200bl", settings=Settings(home=tmp_path))


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every legacy migration planned from now on (the root it was planned for)."""
    seen: list[Path] = []
    original = memory_module.plan_migration

    def counting(paths, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(paths.root)
        return original(paths, *args, **kwargs)

    monkeypatch.setattr(memory_module, "plan_migration", counting)
    return seen


def test_the_legacy_migration_runs_from_open_agent_once(tmp_path: Path, plans: list[Path]) -> None:
    settings = Settings(home=tmp_path)
    root = settings.agent_dir("al")
    root.mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\n## Norms\nbe brief\n", encoding="utf-8")
    AgentMemory("al", settings).close()  # the constructor leaves the files alone
    assert plans == [] and not (root / "knowledge.md").exists()
    with open_agent("al", settings=settings) as mem:
        assert "be brief" in str(mem.knowledge.read())
    assert plans == [root]
    open_agent("al", settings=settings).close()  # migrated: nothing to plan again
    assert plans == [root]
