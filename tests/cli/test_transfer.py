"""export / import through the command line: files ↔ PostgreSQL ↔ another home."""

from __future__ import annotations

from pathlib import Path

from markus_memory import Settings, open_agent
from tests.postgres_support import postgres_url

from .conftest import Invoke, as_json

__all__ = ["postgres_url"]


def _agent(home: Path, agent: str) -> Path:
    with open_agent(agent, settings=Settings(home=home)) as mem:
        mem.notebook.upsert("task", "ship it")
        mem.knowledge.save_observation("Deploys run on Fridays.")
        mem.daily_log.write("quiet")
        return mem.paths.root


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def test_export_to_another_home_and_import_back(
    invoke: Invoke, isolated_home: Path, tmp_path: Path
) -> None:
    root = _agent(isolated_home, "agt_cli")
    report = as_json(invoke("export", "--to-home", str(tmp_path / "copy"), "--json"))
    assert report["agents"] == ["agt_cli"] and report["documents"] == 2
    assert _files(tmp_path / "copy" / "agents" / "agt_cli") == _files(root)
    invoke("export", "--to-home", str(tmp_path / "copy"), code=1)  # exists: refused write
    out = invoke("import", "--from-home", str(tmp_path / "copy"), "--replace").output
    assert "Imported 1 agent(s)" in out


def test_export_to_postgres_in_place_and_back(
    invoke: Invoke, isolated_home: Path, tmp_path: Path, postgres_url: str
) -> None:
    root = _agent(isolated_home, "agt_cli_pg")
    before = _files(root)
    invoke("export", "--to-database-url", postgres_url, "--agent", "agt_cli_pg")
    pg = Settings(home=isolated_home, database_url=postgres_url)
    with open_agent("agt_cli_pg", settings=pg) as mem:
        assert mem.notebook.get("task").text == "ship it"  # type: ignore[union-attr]
    out = tmp_path / "restored"
    invoke(
        "--home",
        str(out),
        "import",
        "--from-database-url",
        postgres_url,
        "--from-home",
        str(isolated_home),
        "--agent",
        "agt_cli_pg",
    )
    assert _files(out / "agents" / "agt_cli_pg") == before


def _tree(home: Path) -> dict[str, bytes]:
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in home.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def test_item5_import_missing_agent_refused(
    invoke: Invoke, isolated_home: Path, tmp_path: Path
) -> None:
    _agent(isolated_home, "agt_kept")
    source = tmp_path / "source"
    _agent(source, "agt_other")
    before = _tree(isolated_home)
    for extra in (("--replace",), ()):
        result = invoke("import", "--from-home", str(source), "--agent", "agt_kept", *extra, code=1)
        assert "no such agent in the source" in result.output
        assert result.output.count("\n") == 1 and "Traceback" not in result.output
        assert _tree(isolated_home) == before  # the target's files are untouched
    assert not (isolated_home / "agents" / "agt_missing").exists()
    invoke("import", "--from-home", str(source), "--agent", "agt_missing", code=1)
    assert not (isolated_home / "agents" / "agt_missing").exists()  # no empty agent made


def test_item5_export_misspelled_agent_refused(
    invoke: Invoke, isolated_home: Path, tmp_path: Path
) -> None:
    _agent(isolated_home, "agt_real")
    result = invoke("export", "--to-home", str(tmp_path / "copy"), "--agent", "agt_reel", code=1)
    assert "no such agent in the source" in result.output
    assert not (tmp_path / "copy").exists()


def test_item6_in_place_export_says_what_happens_to_the_markdown_files(
    invoke: Invoke, isolated_home: Path, tmp_path: Path, postgres_url: str
) -> None:
    root = _agent(isolated_home, "agt_in_place")
    before = _files(root)
    out = invoke("export", "--to-database-url", postgres_url, "--agent", "agt_in_place").output
    assert "stay on disk" in out and str(root) in out and "no longer read" in out
    marker = (root / "MOVED-TO-POSTGRESQL.txt").read_text(encoding="utf-8")
    assert "NOTEBOOK.md" in marker and "knowledge.md" in marker
    assert {k: v for k, v in _files(root).items() if k != "MOVED-TO-POSTGRESQL.txt"} == before
    stale = invoke("doctor", "--agent", "agt_in_place", code=1).output  # files, no URL set
    assert "are a backup, read but never written" in stale
    # importing back to files makes them current again: the marker goes, the bytes stay
    invoke("import", "--from-database-url", postgres_url, "--agent", "agt_in_place", "--replace")
    assert _files(root) == before


def test_item5_import_from_a_home_that_does_not_exist_is_refused(
    invoke: Invoke, tmp_path: Path
) -> None:
    result = invoke("import", "--from-home", str(tmp_path / "typo"), code=1)
    assert "no memory home at" in result.output and "--from-home" in result.output
