from __future__ import annotations

from pathlib import Path

from markus_memory import open_agent


def test_open_agent_exposes_the_file_layers_on_one_agent_dir(isolated_home: Path) -> None:
    with open_agent("agt_abc") as mem:
        assert mem.notebook.upsert("k", "note").evicted is None
        mem.state.update("focus", "testing")
        mem.daily_log.write("did a thing")
        assert mem.roles.heartbeat()
        root = isolated_home / "agents" / "agt_abc"
        assert (root / "NOTEBOOK.md").is_file() and (root / "state.md").is_file()
        assert "Agent: agt_abc" in mem.daily_log.read()
    with open_agent("agt_abc") as again:
        assert [e.text for e in again.notebook.entries()] == ["note"]
        assert again.state.get("focus") is not None


def test_readme_notebook_state_example_runs(isolated_home: Path, capsys) -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Notebook, state, daily log and role", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    exec("from markus_memory import open_agent\n" + code.group(1), {})
    assert "Drafting the Q3 report" in (isolated_home / "agents/alice/NOTEBOOK.md").read_text()
    assert capsys.readouterr().out.startswith("alice ")
