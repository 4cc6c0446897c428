"""The README's PostgreSQL round trip and backup commands, run as written, twice in a row:
the second run changes nothing, and the data is where the README says it goes."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from markus_memory import Settings, open_agent
from markus_memory.transfer._rows import read_rows
from tests.postgres_support import URL_ENV, schema_url

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
README_URL = "postgresql://markus@db/markus"
BACKUP = "/backup/markus"


def readme_commands() -> list[str]:
    """The bash block of the README's export/import commands, one command a line."""
    block = next(
        b
        for b in re.findall(r"^```bash\n(.*?)^```", README, flags=re.S | re.M)
        if "markus-memory export --to-database-url" in b
    )
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_readme_block_is_the_round_trip_and_the_backup() -> None:
    lines = readme_commands()
    assert len(lines) == 3
    assert "export --to-database-url" in lines[0] and "import --from-database-url" in lines[1]
    assert f"export --to-home {BACKUP} --replace" in lines[2]


def _run(lines: list[str], tmp: Path, url: str | None, env_url: str | None = None) -> str:
    script = "\n".join(lines).replace(BACKUP, str(tmp / "backup" / "markus"))
    if url is not None:
        script = script.replace(README_URL, shlex.quote(url))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKUS_")}
    env["HOME"] = str(tmp / "user")  # ~/.markus is the default home, as for a new user
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    if env_url is not None:
        env["MARKUS_DATABASE_URL"] = env_url
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=tmp, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def _agent(home: Path) -> None:
    with open_agent("agt_x", settings=Settings(home=home)) as mem:
        mem.notebook.upsert("task", "ship it")
        mem.knowledge.save_observation("Deploys run on Fridays.")
        session = mem.sessions.create()
        mem.sessions.append(session.id, {"role": "user", "content": "hello"})
        mem.sessions.flush()
        mem.activities.end(mem.activities.start("task", "review"))


def _memory(settings: Settings) -> tuple[dict[str, str], int]:
    """The agent's documents and its episodic row count."""
    with open_agent("agt_x", settings=settings) as mem:
        texts = mem.documents.dump()
        return texts, read_rows(mem.store, "agt_x").count


def _backups(tmp: Path) -> list[Path]:
    folder = tmp / "backup" / "markus" / "backups"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_the_backup_command_twice_on_sqlite(tmp_path: Path) -> None:
    home = tmp_path / "user" / ".markus"
    _agent(home)
    backup_line = [line for line in readme_commands() if "database-url" not in line]
    for _ in range(2):
        _run(backup_line, tmp_path, None)
        assert _memory(Settings(home=tmp_path / "backup" / "markus")) == _memory(
            Settings(home=home)
        )
        assert _backups(tmp_path) == []  # nothing the destination held was lost
    with open_agent("agt_x", settings=Settings(home=home)) as mem:
        mem.knowledge.save_observation("A second fact.")
    out = _run(backup_line, tmp_path, None)
    (kept,) = _backups(tmp_path)
    assert str(kept) in out and "--replace" in out
    assert "A second fact." not in _memory(Settings(home=kept))[0]["knowledge.md"]
    assert (
        "A second fact."
        in _memory(Settings(home=tmp_path / "backup" / "markus"))[0]["knowledge.md"]
    )
    _run(backup_line, tmp_path, None)
    assert len(_backups(tmp_path)) == 1


@pytest.fixture
def fresh_url() -> str:
    """A schema of its own: the README's agent id is fixed."""
    psycopg = pytest.importorskip("psycopg")
    server = os.environ.get(URL_ENV)
    if not server:
        pytest.skip(f"{URL_ENV} is not set")
    schema = f"markus_readme_{os.getpid()}_{os.urandom(3).hex()}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    yield schema_url(server, schema)
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_the_round_trip_and_backup_twice_on_postgres(tmp_path: Path, fresh_url: str) -> None:
    home = tmp_path / "user" / ".markus"
    _agent(home)
    files = _memory(Settings(home=home))
    for _ in range(2):
        _run(readme_commands(), tmp_path, fresh_url)
        assert _memory(Settings(home=home, database_url=fresh_url)) == files
        assert _memory(Settings(home=tmp_path / "restored")) == files
        assert _memory(Settings(home=tmp_path / "backup" / "markus")) == files
        assert _backups(tmp_path) == []
    shared = Settings(home=home, database_url=fresh_url)
    with open_agent("agt_x", settings=shared) as mem:
        mem.knowledge.save_observation("Written in PostgreSQL.")
    backup_line = readme_commands()[2:]
    for _ in range(2):  # the backup, as configured: with the URL, from PostgreSQL
        _run(backup_line, tmp_path, fresh_url, env_url=fresh_url)
        assert _memory(Settings(home=tmp_path / "backup" / "markus")) == _memory(shared)
    (kept,) = _backups(tmp_path)
    assert _memory(Settings(home=kept)) == files
