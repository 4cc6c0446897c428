"""SQLite and PostgreSQL recall the same turns: top-10 agreement on the LoCoMo dev data.

Usage: python benchmarks/recall_parity.py PATH/locomo.json [--pg-url URL]

Every conversation is ingested as one agent (as ``benchmarks/locomo.py`` does, no embedder) into
a SQLite home and into a fresh PostgreSQL schema; every question of categories 1-4 is asked of
both. Prints the share of questions whose top-10 dia_ids are identical, the share with the same
set, and recall_any@10 / recall_all@10 per backend. Needs ``MARKUS_TEST_POSTGRES_URL``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _locomo_data import ReplayClock, load, record  # noqa: E402
from _metrics import summarize  # noqa: E402
from _recall_fixture import fresh_pg_schema  # noqa: E402
from markus_memory import open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402


def ranked(path: Path, home: Path, url: str | None) -> list[tuple[int, list[str], set[str]]]:
    out = []
    clock = ReplayClock()
    settings = Settings(home=home, clock=clock, database_url=url)
    for conv in load(path):
        with open_agent(f"locomo-{conv.sample_id}", settings=settings) as mem:
            record(mem, conv, clock)
            for q in conv.questions:
                hits = mem.recall_conversation(q.question, limit=10, neighbours=0)
                ids = [str(h.metadata.get("dia_id")) for h in hits]
                out.append((q.category, ids, set(q.evidence)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--pg-url", default=os.environ.get("MARKUS_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    if not args.pg_url:
        print("set MARKUS_TEST_POSTGRES_URL or --pg-url")
        return 2
    with fresh_pg_schema(args.pg_url, "parity") as url, tempfile.TemporaryDirectory() as tmp:
        lite = ranked(args.path, Path(tmp) / "sqlite", None)
        pg = ranked(args.path, Path(tmp) / "pg", url)
    same = sum(a[1] == b[1] for a, b in zip(lite, pg, strict=True))
    same_set = sum(set(a[1]) == set(b[1]) for a, b in zip(lite, pg, strict=True))
    n = len(lite)
    print(f"questions {n}: identical top-10 {same / n:.3f}, same top-10 set {same_set / n:.3f}")
    for name, results in (("sqlite", lite), ("postgres", pg)):
        s = summarize(results, [0.0])
        any10, all10 = s["recall_any@10"], s["recall_all@10"]
        print(f"  {name}: recall_any@10 {any10:.3f} recall_all@10 {all10:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
