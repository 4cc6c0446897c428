from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from markus_memory import AgentMemory, open_agent
from markus_memory.tools import dispatch


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    with open_agent("agt_tools", home=tmp_path / "home") as mem:
        yield mem


def call(memory: AgentMemory, name: str, args: Any = None) -> dict[str, Any]:
    """dispatch and decode; every result must be one compact JSON object."""
    text = dispatch(memory, name, args)
    result = json.loads(text)
    assert text == json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    assert isinstance(result, dict)
    return result


def files_digest(root: Path) -> dict[str, str]:
    """Every file under the agent dir (but the lock) and its hash: to prove nothing changed."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }
