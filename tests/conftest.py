from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No test ever touches the real ~/.markus: MARKUS_HOME points into tmp_path."""
    home = tmp_path / "markus-home"
    monkeypatch.setenv("MARKUS_HOME", str(home))
    monkeypatch.delenv("MARKUS_DATABASE_URL", raising=False)
    yield home
