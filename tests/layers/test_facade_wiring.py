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
