"""The markdown layers on files vs on PostgreSQL: median cost of a write and of a cached read.

Run: MARKUS_BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test \
     python benchmarks/bench_documents.py
Prints medians in microseconds per operation for each store and the PostgreSQL/files ratio,
measured round by round in the same process. The tables go into a throw-away schema.
"""

from __future__ import annotations

import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import psycopg

from markus_memory._docs import DocumentStore
from markus_memory._fs_docs import FileDocuments
from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits, utc_now
from markus_memory.layers.knowledge import KnowledgeFile
from markus_memory.layers.notebook import Notebook
from markus_memory.storage._postgres.documents import PostgresDocuments

ROUNDS = 200
TEXT = "x" * 1500 + "\n" + "y" * 1500


def layers(
    paths: AgentPaths, lock: AgentLock, docs: DocumentStore
) -> tuple[Notebook, KnowledgeFile]:
    notebook = Notebook(paths, lock, Limits(), utc_now, documents=docs)
    knowledge = KnowledgeFile(paths, lock, Limits(), utc_now, documents=docs)
    for key in ("a", "b", "c"):
        notebook.upsert(key, TEXT)
    for i in range(200):
        knowledge.save_observation(f"observation {i} " + "z" * 200)
    return notebook, knowledge


def paired(actions: dict[str, Callable[[int], object]]) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for i in range(ROUNDS):
        for name, action in actions.items():
            start = time.perf_counter()
            action(i)
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) * 1e6 for name, s in samples.items()}


def main() -> None:
    url = os.environ.get("MARKUS_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    schema = f"markus_bench_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as admin, tempfile.TemporaryDirectory() as tmp:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            paths = AgentPaths(Path(tmp) / "agt_bench")
            lock = AgentLock(paths.lock)
            pg = PostgresDocuments(f"{url}?options={quote('-csearch_path=' + schema)}", "agt_bench")
            try:
                nb_f, kf_f = layers(paths, lock, FileDocuments(paths.root, lock))
                nb_p, kf_p = layers(paths, lock, pg)
                writes = paired(
                    {
                        "files notebook.upsert": lambda i: nb_f.upsert("a", f"{i} {TEXT}"),
                        "pg    notebook.upsert": lambda i: nb_p.upsert("a", f"{i} {TEXT}"),
                        "files knowledge.save": lambda i: kf_f.save_observation(f"new {i}"),
                        "pg    knowledge.save": lambda i: kf_p.save_observation(f"new {i}"),
                    }
                )
                reads = paired(
                    {
                        "files notebook.entries (cached)": lambda i: nb_f.entries(),
                        "pg    notebook.entries (cached)": lambda i: nb_p.entries(),
                        "files knowledge.observations": lambda i: kf_f.observations(),
                        "pg    knowledge.observations": lambda i: kf_p.observations(),
                    }
                )
            finally:
                pg.close()
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
    results = writes | reads
    for name, value in results.items():
        print(f"{name:34s} {value:10.1f} us")
    for op in (
        "notebook.upsert",
        "knowledge.save",
        "notebook.entries (cached)",
        "knowledge.observations",
    ):
        ratio = results[f"pg    {op}"] / results[f"files {op}"]
        print(f"ratio pg/files {op:26s} {ratio:6.2f}x")


if __name__ == "__main__":
    main()
