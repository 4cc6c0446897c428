from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from markus_memory.storage.base import EpisodicStore
from markus_memory.storage.sqlite import SqliteStore

# The conformance suite runs once per backend; PostgreSQL joins this list when it lands.
BACKENDS = ["sqlite"]


def open_backend(name: str, tmp_path: Path) -> EpisodicStore:
    if name == "sqlite":
        return SqliteStore(tmp_path / "data.db")
    raise AssertionError(f"unknown backend {name}")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicStore]:
    backend = open_backend(request.param, tmp_path)
    yield backend
    backend.close()
