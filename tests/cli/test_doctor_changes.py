"""doctor changes nothing; doctor --fix says what it changes, then does it (#12 items 7, 21)."""

from __future__ import annotations

from pathlib import Path

from click.testing import Result

from markus_memory import open_agent

from .conftest import Invoke, as_json

BROKEN_NOTEBOOK = b"# Notebook\n\n## task\nhello \xff world\n\n## other\nkept \xe2\x82\xac\n"


def _tree(home: Path) -> dict[str, bytes]:
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def _damaged(home: Path) -> Path:
    with open_agent("al") as mem:
        for sid in ("s1", "s2"):
            mem.sessions.get_or_create(sid)
            mem.sessions.append(sid, {"role": "user", "content": f"hello from {sid}"})
        mem.knowledge.save_observation("Deploys run on Fridays.")
        mem.daily_log.write("quiet day")
        root = mem.paths.root
    (root / "sessions" / "s1.json").write_bytes(b"garbage{")
    (root / "NOTEBOOK.md").write_bytes(BROKEN_NOTEBOOK)
    return root


def _one_line_error(result: Result) -> str:
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def test_item7_doctor_without_fix_changes_nothing(invoke: Invoke, isolated_home: Path) -> None:
    _damaged(isolated_home)
    before = _tree(isolated_home)
    out = invoke("doctor", code=1).output
    assert _tree(isolated_home) == before  # no file renamed, written or created
    assert "doctor --fix would:" in out
    assert "sessions/s1.json" in out and "NOTEBOOK.md" in out
    report = as_json(invoke("doctor", "--json", code=1))
    assert _tree(isolated_home) == before
    fixes = [c["fix"] for c in report["checks"] if c["fix"]]
    assert any("s1.json" in f for f in fixes) and any("U+FFFD" in f for f in fixes)


def test_item7_doctor_fix_says_what_it_changes_then_does_it(
    invoke: Invoke, isolated_home: Path
) -> None:
    root = _damaged(isolated_home)
    out = invoke("doctor", "--fix").output
    lines = out.splitlines()
    announce = next(i for i, line in enumerate(lines) if line.startswith("fixing al: session s1"))
    done = next(i for i, line in enumerate(lines) if line.startswith("fixed: al: session s1"))
    assert announce < done and "moved aside: s1.json.corrupt-" in lines[done]
    assert not (root / "sessions" / "s1.json").exists()
    assert (root / "sessions" / "s2.json").exists()  # the intact session is left alone
    aside = list((root / "sessions").glob("s1.json.corrupt-*"))
    assert [p.read_bytes() for p in aside] == [b"garbage{"]
    assert "All checks passed." in out
    assert "All checks passed." in invoke("doctor").output


def test_item21_invalid_utf8_notebook_explained_and_repaired(
    invoke: Invoke, isolated_home: Path
) -> None:
    root = _damaged(isolated_home)
    for args in (("show",), ("prompt",), ("notebook", "set", "k", "v"), ("notebook", "show")):
        line = _one_line_error(invoke(*args, "-a", "al", code=1))
        assert "NOTEBOOK.md line 4, column 7" in line, line
        assert "doctor --fix --agent al" in line
    assert (root / "NOTEBOOK.md").read_bytes() == BROKEN_NOTEBOOK  # the refusals wrote nothing
    out = invoke("doctor", "--fix", "--agent", "al").output
    assert "fixed: al: NOTEBOOK.md" in out
    repaired = (root / "NOTEBOOK.md").read_bytes()
    assert repaired == BROKEN_NOTEBOOK.replace(b"\xff", "\ufffd".encode())  # all else kept
    (backup,) = root.glob("NOTEBOOK.md.corrupt-*")
    assert backup.read_bytes() == BROKEN_NOTEBOOK
    shown = invoke("notebook", "show", "-a", "al").output
    assert "kept €" in shown and "hello \ufffd world" in shown
    invoke("notebook", "set", "k", "v", "-a", "al")


def test_item13_doctor_reports_a_linked_sessions_folder_and_reads_nothing_through_it(
    invoke: Invoke, isolated_home: Path
) -> None:
    with open_agent("al") as mem:
        mem.knowledge.save_observation("Deploys run on Fridays.")
        root = mem.paths.root
    elsewhere = isolated_home.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "s9.json").write_bytes(b"garbage{")
    if (root / "sessions").exists():
        (root / "sessions").rmdir()
    (root / "sessions").symlink_to(elsewhere, target_is_directory=True)
    out = invoke("doctor", code=1).output
    assert "sessions/ is a symbolic link" in out
    assert "s9.json" not in out  # nothing inside the link was read
    assert (root / "sessions").is_symlink() and (elsewhere / "s9.json").exists()
