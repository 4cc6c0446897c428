from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Fixtures every test may ask for: ``backend`` runs a test on SQLite and on PostgreSQL.
from tests.backends import backend  # noqa: F401
from tests.postgres_support import postgres_url  # noqa: F401

# Property tests check behaviour, not speed: a loaded machine must not fail them on
# hypothesis' per-example deadline (timing belongs to benchmarks/).
settings.register_profile("markus", deadline=None)
settings.load_profile("markus")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No test ever touches the real ~/.markus (MARKUS_HOME points into tmp_path) or ~/.claude."""
    home = tmp_path / "markus-home"
    monkeypatch.setenv("MARKUS_HOME", str(home))
    monkeypatch.delenv("MARKUS_DATABASE_URL", raising=False)
    # Tests choose their embedder: none unless a test sets one (the default is the MiniLM).
    monkeypatch.setenv("MARKUS_EMBEDDER", "none")
    # Nor the real Claude Code settings: `install claude-code` writes where this points.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    yield home
