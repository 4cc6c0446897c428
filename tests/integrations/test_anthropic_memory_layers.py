"""The memory tool never answers "edited" for text its layers did not keep.

Every command on every layer file either lands (the text is read back through the library's
layer API afterwards) or is a ToolError and the files are byte-identical.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("anthropic")


from markus_memory import open_agent
from markus_memory.integrations.anthropic_memory import MarkusMemoryTool
from markus_memory.memory import AgentMemory
from tests.integrations.anthropic_support import edit, insert, run

MARK = "zebra marker seven"
LAYERS = ("NOTEBOOK.md", "knowledge.md", "state.md")


@contextmanager
def seeded(home: Path) -> Iterator[AgentMemory]:
    with open_agent("claude", home) as memory:
        memory.notebook.upsert("plan", "ship it")
        memory.state.update("mood", "calm")
        memory.knowledge.update_section("people", "Ana likes tea")
        memory.knowledge.save_observation("Bob prefers coffee")
        memory.knowledge.save_observation("Cleo writes Go")
        yield memory


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[AgentMemory]:
    with seeded(tmp_path) as memory:
        yield memory


def files(mem: AgentMemory) -> dict[str, bytes]:
    paths = [mem.notebook.path, mem.knowledge.path, mem.state.path]
    free = mem.directory / "memories"
    if free.exists():
        paths += sorted(p for p in free.rglob("*") if p.is_file())
    return {str(p): p.read_bytes() if p.exists() else b"" for p in paths}


def kept(mem: AgentMemory, name: str) -> str:
    """What the layer holds, read through the library's API (not the file's text)."""
    if name == "NOTEBOOK.md":
        return "\n".join(f"{e.key}\n{e.text}" for e in mem.notebook.entries())
    if name == "state.md":
        return "\n".join(f"{e.key}\n{e.content}" for e in mem.state.entries())
    observations = [o.content for o in mem.knowledge.observations()]
    return "\n".join([mem.knowledge.curated_text(), *observations])


TEXTS = (f"- current task: {MARK}", MARK, f"focus: {MARK}", f"## fresh-key\n{MARK}\n")
EXISTING = {"NOTEBOOK.md": "ship it", "state.md": "calm", "knowledge.md": "Ana likes tea"}


def commands(name: str, mem: AgentMemory) -> Iterator[tuple[dict[str, Any], str]]:
    """Every command on the layer file ``name``, each with the text that must land."""
    path = f"/memories/{name}"
    lines = run(MarkusMemoryTool(mem), command="view", path=path).split("\n")[1:]
    yield {"command": "view", "path": path}, EXISTING[name]
    for text in TEXTS:
        yield {"command": "create", "path": path, "file_text": text}, MARK
        for at in sorted({0, 1, 3, len(lines) // 2, len(lines) - 1}):
            yield {"command": "insert", "path": path, "insert_line": at, "insert_text": text}, MARK
        title = lines[0].split("\t", 1)[1]
        yield (
            {
                "command": "str_replace",
                "path": path,
                "old_str": title,
                "new_str": title + "\n" + text,
            },
            MARK,
        )
        yield (
            {"command": "str_replace", "path": path, "old_str": EXISTING[name], "new_str": text},
            MARK,
        )
    yield {"command": "delete", "path": path}, EXISTING[name]
    yield {"command": "rename", "old_path": path, "new_path": "/memories/x.md"}, EXISTING[name]


@pytest.mark.parametrize("name", LAYERS)
def test_every_command_on_a_layer_file_lands_or_changes_nothing(tmp_path: Path, name: str) -> None:
    with seeded(tmp_path / "plan") as mem:
        planned = list(commands(name, mem))
    assert len(planned) >= 30
    for index, (command, text) in enumerate(planned):
        with seeded(tmp_path / str(index)) as mem:
            before = files(mem)
            result = run(MarkusMemoryTool(mem), **command)
            if result.startswith("ERROR: "):
                assert files(mem) == before, (command, result)
            else:
                assert text in kept(mem, name), (command, result)


def test_free_lines_become_entries_the_model_is_told_about(mem: AgentMemory) -> None:
    tool = MarkusMemoryTool(mem)
    said = insert(tool, "NOTEBOOK.md", 0, "- current task: write the report")
    assert said.endswith("`- current task: write the report` became `## current-task`.")
    entry = mem.notebook.get("current-task")
    assert entry is not None and entry.text == "write the report"

    insert(tool, "state.md", 1, "focus: review")
    assert [(e.key, e.content) for e in mem.state.entries()] == [
        ("mood", "calm"),
        ("focus", "review"),
    ]
    edit(tool, "state.md", "# State", "# State\nwaiting on Ana")
    assert mem.state.get("waiting-on-ana") is not None


def test_text_left_without_its_heading_becomes_an_entry(mem: AgentMemory) -> None:
    said = edit(MarkusMemoryTool(mem), "NOTEBOOK.md", "## plan\n", "")
    assert said.startswith("The memory file has been edited."), said
    assert [(e.key, e.text) for e in mem.notebook.entries()] == [("ship-it", "ship it")]


def test_a_refusal_after_part_of_an_edit_changes_nothing(mem: AgentMemory) -> None:
    """An edit is one command: a refusal of its last entry leaves the first ones unchanged."""
    tool = MarkusMemoryTool(mem)
    for path, old, new in (
        ("/memories/NOTEBOOK.md", "ship it", "ship it now\n\n## empty\n"),
        ("/memories/state.md", "calm", "calm again\n\n## huge\n" + "x" * 1_000_001),
        ("/memories/state.md", "calm", "calm again\n\n## odd\n\ud800"),
    ):
        before = files(mem)
        said = run(tool, command="str_replace", path=path, old_str=old, new_str=new)
        assert said.startswith("ERROR: "), said
        assert files(mem) == before, said
    assert [e.text for e in mem.notebook.entries()] == ["ship it"]
    assert [e.content for e in mem.state.entries()] == ["calm"]


@pytest.mark.parametrize(("name", "key"), [("NOTEBOOK.md", "plan"), ("state.md", "mood")])
def test_a_second_entry_under_a_taken_key_is_refused(mem: AgentMemory, name: str, key: str) -> None:
    before = files(mem)
    said = insert(MarkusMemoryTool(mem), name, 0, f"## {key}\nsomething else")
    assert f"two entries are named `## {key}`" in said
    assert files(mem) == before


def test_a_free_line_naming_an_existing_key_is_refused(mem: AgentMemory) -> None:
    before = files(mem)
    said = insert(MarkusMemoryTool(mem), "NOTEBOOK.md", 0, "plan: something else")
    assert "`## plan`, which exists already" in said and "Format: NOTEBOOK.md holds" in said
    assert files(mem) == before


def test_the_observation_heading_is_protected(mem: AgentMemory) -> None:
    tool = MarkusMemoryTool(mem)
    before = files(mem)
    for new in ("## Observations", "## _obs", "observations"):
        said = edit(tool, "knowledge.md", "## _observations", new)
        assert "`## _observations` heading is protected" in said, said
        assert files(mem) == before
    assert [o.content for o in mem.knowledge.observations()] == [
        "Bob prefers coffee",
        "Cleo writes Go",
    ]


def test_a_heading_inside_an_observation_cannot_move_the_later_ones(mem: AgentMemory) -> None:
    before = files(mem)
    said = edit(
        MarkusMemoryTool(mem), "knowledge.md", "Bob prefers coffee", "Bob prefers coffee\n## Drinks"
    )
    assert "would turn the observations after it into a curated section" in said
    assert files(mem) == before
    assert [s.name for s in mem.knowledge.sections()] == ["people"]


def test_a_section_appended_below_the_buffer_lands_above_it(mem: AgentMemory) -> None:
    tool = MarkusMemoryTool(mem)
    end = len(mem.knowledge.text().rstrip("\n").split("\n"))
    said = insert(tool, "knowledge.md", end, "## drinks\nEveryone likes water")
    assert said.startswith("The file"), said
    assert mem.knowledge.section("drinks") == "Everyone likes water"
    assert len(mem.knowledge.observations()) == 2


def test_free_lines_in_the_buffer_become_one_observation(mem: AgentMemory) -> None:
    tool = MarkusMemoryTool(mem)
    text = mem.knowledge.text()
    header = next(line for line in text.split("\n") if line.startswith("<!-- Dream"))
    said = edit(tool, "knowledge.md", header, header + "\nDana reads poems")
    assert "became the observation" in said
    assert [o.content for o in mem.knowledge.observations()][-1] == "Dana reads poems"


def test_an_observation_id_cannot_be_taken_twice(mem: AgentMemory) -> None:
    taken = mem.knowledge.observations()[0].id
    before = files(mem)
    said = insert(
        MarkusMemoryTool(mem),
        "knowledge.md",
        len(mem.knowledge.text().rstrip("\n").split("\n")),
        f"### {taken}\nDana reads poems",
    )
    assert f"`### {taken}` is taken" in said
    assert files(mem) == before


def test_an_empty_observation_is_refused_not_dropped(mem: AgentMemory) -> None:
    before = files(mem)
    said = insert(
        MarkusMemoryTool(mem),
        "knowledge.md",
        len(mem.knowledge.text().rstrip("\n").split("\n")),
        "### obs_lonely",
    )
    assert said.startswith("ERROR: knowledge.md was not changed: the line `### obs_lonely`")
    assert files(mem) == before


def test_a_malformed_create_creates_nothing(mem: AgentMemory) -> None:
    tool = MarkusMemoryTool(mem)
    for command in (
        {"command": "create", "path": "/memories/a.md"},
        {"command": "create", "path": "/memories/b.md", "file_text": 3},
        {
            "command": "insert",
            "path": "/memories/NOTEBOOK.md",
            "insert_line": "two",
            "insert_text": "x",
        },
        {"command": "view", "path": "/memories", "view_range": [1]},
    ):
        said = run(tool, **command)
        assert said.startswith("ERROR: "), command
    assert "`file_text` must be a string, got nothing" in run(
        tool, command="create", path="/memories/a.md"
    )
    assert not (mem.directory / "memories" / "a.md").exists()
    assert not (mem.directory / "memories" / "b.md").exists()


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(LAYERS),
    text=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60),
    at=st.integers(0, 12),
)
def test_any_inserted_line_lands_or_changes_nothing(name: str, text: str, at: int) -> None:
    with tempfile.TemporaryDirectory() as home, seeded(Path(home)) as mem:
        tool = MarkusMemoryTool(mem)
        shown = run(tool, command="view", path=f"/memories/{name}").split("\n")[1:]
        before = files(mem)
        result = run(
            tool,
            command="insert",
            path=f"/memories/{name}",
            insert_line=min(at, len(shown)),
            insert_text=text,
        )
        if result.startswith("ERROR: "):
            assert files(mem) == before, result
        else:
            held = kept(mem, name)
            for line in text.split("\n"):
                words = line.strip().lstrip("-*+#0123456789.) ").split(":")[-1].strip()
                assert words in held, (line, result)
