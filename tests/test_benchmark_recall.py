"""benchmarks/bench_recall.py runs end to end on a small SQLite agent (the figures themselves
belong to the benchmark, not to the tests)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.postgres_support import _server_url

ROOT = Path(__file__).resolve().parent.parent


def bench_recall(cache: Path, *args: str) -> str:
    """What ``bench_recall.py args`` prints, with its fixtures cached under ``cache``."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_recall.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MARKUS_BENCH_CACHE": str(cache)},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_bench_recall_prints_cold_warm_and_write_cost(tmp_path: Path) -> None:
    out = bench_recall(
        tmp_path, "--messages", "3000", "--backend", "sqlite", "--processes", "1", "--queries", "5"
    )
    number = r"\d+(\.\d+)?"
    assert re.search(rf"cold: open \+ first recall median {number} ms", out), out
    assert re.search(rf"warm: recall median {number} ms", out), out
    assert re.search(rf"append median {number} us", out), out
    ratio = re.search(rf"as at eb3b962 .*: ({number})x", out)
    assert ratio is not None and float(ratio.group(1)) > 0, out


def test_bench_recall_measures_the_write_cost_alone_without_a_fixture(tmp_path: Path) -> None:
    out = bench_recall(tmp_path, "--write-cost-only", "--rounds", "1", "--backend", "sqlite")
    assert "[sqlite] write cost, 1 rounds" in out, out
    ratio = re.search(r"as at eb3b962 .*: (\d+\.\d+)x", out)
    assert ratio is not None and float(ratio.group(1)) > 0, out
    assert "cold:" not in out and not any(tmp_path.iterdir()), out


# The indexes on transcript_messages at commit eb3b962 (its m005; m006 added none), as
# sqlite_master / pg_indexes list them.
EB3B962_INDEXES = {
    "sqlite": {
        "index idx_transcript_agent_created",
        "index sqlite_autoindex_transcript_messages_1",
        "trigger transcript_ai",
    },
    "postgres": {
        "CREATE INDEX idx_transcript_agent_created ON transcript_messages "
        "USING btree (agent_id, created_at)",
        "CREATE INDEX idx_transcript_search ON transcript_messages USING gin (search)",
        "CREATE UNIQUE INDEX transcript_messages_agent_id_session_id_seq_key ON "
        "transcript_messages USING btree (agent_id, session_id, seq)",
        "CREATE UNIQUE INDEX transcript_messages_pkey ON transcript_messages USING btree (id)",
    },
}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_write_cost_baseline_has_the_indexes_of_eb3b962(backend: str) -> None:
    """The write cost is a ratio against commit eb3b962: the store it emulates must maintain
    exactly that commit's indexes on every message, no more (an index added since would
    inflate the baseline) and no fewer (the triggers that fire on an update or a delete are
    left out: the benchmark only inserts)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_recall

    url = _server_url() if backend == "postgres" else None
    with bench_recall.fresh_store(url, "baseline") as store, store.database.write() as conn:
        for statement in bench_recall.EB3B962_FULL_TEXT[backend]:
            conn.execute(statement)
        if url is None:
            found = {
                f"{kind} {name}"
                for kind, name in conn.execute(
                    "SELECT type, name FROM sqlite_master WHERE tbl_name = 'transcript_messages' "
                    "AND type IN ('index', 'trigger')"
                )
            }
        else:
            found = {
                row[0].replace(f"{row[1]}.", "")
                for row in conn.execute(
                    "SELECT indexdef, schemaname FROM pg_indexes "
                    "WHERE tablename = 'transcript_messages' AND schemaname = current_schema()"
                )
            }
    assert found == EB3B962_INDEXES[backend]
