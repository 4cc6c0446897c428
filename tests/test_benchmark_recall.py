"""benchmarks/bench_recall.py runs end to end on a small SQLite agent (the figures themselves
belong to the benchmark, not to the tests)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_recall_prints_cold_warm_and_write_cost(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_recall.py"),
            *("--messages", "3000", "--backend", "sqlite", "--processes", "1"),
            *("--queries", "5"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MARKUS_BENCH_CACHE": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    number = r"\d+(\.\d+)?"
    assert re.search(rf"cold: open \+ first recall median {number} ms", out.stdout), out.stdout
    assert re.search(rf"warm: recall median {number} ms", out.stdout), out.stdout
    assert re.search(rf"append median {number} us", out.stdout), out.stdout
    ratio = re.search(rf"as at eb3b962 .*: ({number})x", out.stdout)
    assert ratio is not None and float(ratio.group(1)) > 0, out.stdout
