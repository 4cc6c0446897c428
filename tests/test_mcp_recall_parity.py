"""recall_conversation through the real MCP server over stdio ranks exactly as the library does.

The LoCoMo parity script (``benchmarks/locomo_mcp.py``) on the tiny hand-made conversation of
the LoCoMo script's tests: the same agent, home and ``MARKUS_EMBEDDER`` for both doors, every
question asked of each."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from benchmarks import locomo_mcp  # noqa: E402
from benchmarks._locomo_data import load  # noqa: E402

from tests.test_benchmark_locomo import SAMPLE  # noqa: E402

THIRD = {"question": "What is Ana busy with at work?", "evidence": ["D2:4"], "category": 4}


@pytest.mark.slow
def test_the_server_returns_the_librarys_hits_for_every_question(tmp_path: Path) -> None:
    sample = copy.deepcopy(SAMPLE)
    sample[0]["qa"].append(THIRD)
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(sample))
    (conv,) = load(path)
    home = tmp_path / "home"
    locomo_mcp.ingest([conv], home, "none")
    env = locomo_mcp.server_env(home, "none")
    library = locomo_mcp.ask_library(conv, env)
    server = locomo_mcp.ask_server(conv, env)
    assert len(server.hits) == 3 and all(server.hits)
    assert server.hits == library.hits
    found = [ranked[0] for _, _, ranked, _ in locomo_mcp.scored(conv, server)]
    assert found[0] == "D1:1" and found[2] == "D2:4"
