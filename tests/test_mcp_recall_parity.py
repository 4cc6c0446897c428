"""recall_conversation through the real MCP server over stdio ranks exactly as the library does.

The LoCoMo parity script (``benchmarks/locomo_mcp.py``) on a tiny hand-made conversation: the
same agent, home and ``MARKUS_EMBEDDER`` for both doors, every question asked of each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from benchmarks import locomo_mcp  # noqa: E402
from benchmarks._locomo_data import load  # noqa: E402

SAMPLE = [
    {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning violin."},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "Biscuit loves the beach."},
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "My violin recital went well."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Biscuit chewed my running shoes."},
                {"speaker": "Ben", "dia_id": "D2:3", "text": "I run every morning by the beach."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ana's puppy?", "evidence": ["D1:1"], "category": 4},
            {
                "question": "How is Ben doing with violin?",
                "evidence": ["D1:2; D2:1"],
                "category": 1,
            },
            {"question": "Where does Ben run?", "evidence": ["D2:3"], "category": 4},
        ],
    }
]


@pytest.mark.slow
def test_the_server_returns_the_librarys_hits_for_every_question(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(SAMPLE))
    (conv,) = load(path)
    home = tmp_path / "home"
    locomo_mcp.ingest([conv], home, "none")
    env = locomo_mcp.server_env(home, "none")
    library = locomo_mcp.ask_library(conv, env)
    server = locomo_mcp.ask_server(conv, env)
    assert len(server.hits) == 3 and all(server.hits)
    assert server.hits == library.hits
    found = [ranked for _, _, ranked, _ in locomo_mcp.scored(conv, server)]
    assert found[0][0] == "D1:1"
