"""LoCoMo retrieval benchmark for recall_conversation, with the Markus keyword search as baseline.

Usage: python benchmarks/locomo.py PATH/locomo.json [--out results.json] [--no-vectors] [--loo]
[--database-url postgresql://...] [--vector-cache DIR]

Every conversation becomes one agent (one session per LoCoMo session, its turns appended as
messages at the session's date with ``metadata = {dia_id, speaker}``) through the public API.
Every question of categories 1-4 is asked through ``AgentMemory.recall_conversation`` against
that agent only. A turn counts as found only when its dia_id is among the top-k hits
themselves (neighbouring turns returned with a hit do not count). The baseline ranks the same
turns with the original Markus keyword algorithm (tokenize, OR scoring). ``bm25_reopened``
closes each agent after ingest and reopens it: its index is backfilled from the episodic store
(what every new process sees), so it must match ``bm25``. A table then gives recall@10 per
conversation and per question category for every run. ``--loo`` adds the
leave-one-conversation-out check of each ranking knob (tuned on the other conversations,
scored on the one left out; see ``_locomo_loo.py``). ``--database-url`` keeps the
transcripts in that PostgreSQL database instead of SQLite, in a schema of the run's own that
is dropped after it (the agent ids are the same every run). ``--vector-cache DIR`` keeps
MiniLM's vectors in ``DIR`` across runs (``_vector_cache.py``; the ingest time it prints is
then not the embedder's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _locomo_loo  # noqa: E402
import _markus_keyword as markus  # noqa: E402
from _locomo_data import CATEGORIES, LocomoConversation, ReplayClock, load, record  # noqa: E402
from _locomo_tables import Result, breakdown, format_breakdown  # noqa: E402
from _metrics import KS, summarize  # noqa: E402
from _recall_fixture import fresh_pg_schema, local_embedder  # noqa: E402
from _vector_cache import cached  # noqa: E402
from markus_memory import open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402

DEPTH = max(KS)


def run_memory(
    conversations: list[LocomoConversation],
    home: Path,
    embedder: object | None,
    *,
    reopen: bool = False,
    database_url: str | None = None,
) -> tuple[dict[str, object], list[Result]]:
    """Ingest each conversation and ask its questions; with ``reopen`` the agent is closed
    after ingest and reopened, so recall backfills its index from the episodic store."""
    results: list[Result] = []
    latencies: list[float] = []
    ingest = 0.0
    for conv in conversations:
        clock = ReplayClock()
        started = time.perf_counter()
        settings = Settings(home=home, clock=clock, database_url=database_url)
        agent = f"locomo-{home.name}-{conv.sample_id}"
        mem = open_agent(agent, settings=settings, embedder=embedder)  # type: ignore[arg-type]
        record(mem, conv, clock)
        if reopen:
            mem.close()
            mem = open_agent(agent, settings=settings, embedder=embedder)  # type: ignore[arg-type]
        mem.catch_up_transcripts()  # every turn in the index, with its vector: part of ingest
        mem.recall_conversation("index warm-up", limit=1)
        ingest += time.perf_counter() - started
        for question in conv.questions:
            started = time.perf_counter()
            hits = mem.recall_conversation(question.question, limit=DEPTH, neighbours=0)
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = [str(hit.metadata.get("dia_id")) for hit in hits]
            results.append((conv.sample_id, question.category, ranked, set(question.evidence)))
        mem.close()
    summary = summarize([r[1:] for r in results], latencies)
    summary["ingest_seconds"] = round(ingest, 3)
    summary["turns"] = sum(len(conv.turns) for conv in conversations)
    return summary, results


def run_markus(conversations: list[LocomoConversation]) -> tuple[dict[str, object], list[Result]]:
    results: list[Result] = []
    latencies: list[float] = []
    for conv in conversations:
        texts = [turn.text for turn in conv.turns]
        for question in conv.questions:
            started = time.perf_counter()
            positions = markus.search(texts, question.question)[:DEPTH]
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = [conv.turns[p].dia_id for p in positions]
            results.append((conv.sample_id, question.category, ranked, set(question.evidence)))
    return summarize([r[1:] for r in results], latencies), results


def _row(name: str, summary: dict[str, object]) -> str:
    cells = [f"{summary[f'recall_any@{k}']:.3f}" for k in KS]
    cells += [f"{summary[f'recall_all@{k}']:.3f}" for k in KS]
    cells += [f"{summary['ndcg@10']:.3f}", f"{summary['latency_median_ms']:.2f}"]
    cells += [f"{summary['latency_p95_ms']:.2f}"]
    return f"{name:<22}" + " ".join(f"{cell:>7}" for cell in cells)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/locomo.json"))
    parser.add_argument("--no-vectors", action="store_true", help="skip the hybrid run")
    parser.add_argument("--loo", action="store_true", help="leave-one-out check of each knob")
    parser.add_argument("--database-url", help="transcripts in this PostgreSQL (default SQLite)")
    parser.add_argument("--vector-cache", type=Path, help="keep vectors here across runs")
    args = parser.parse_args(argv)
    url = args.database_url
    conversations = load(args.path)
    report: dict[str, object] = {"data": str(args.path), "categories": CATEGORIES}
    tables: dict[str, list[Result]] = {}
    embedder = cached(local_embedder(not args.no_vectors), args.vector_cache)
    with contextlib.ExitStack() as stack:
        if url:  # a schema of its own: the agents' ids are the same every run
            url = stack.enter_context(fresh_pg_schema(url, "locomo"))
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        report["markus_keyword"], tables["markus_keyword"] = run_markus(conversations)
        report["bm25"], tables["bm25"] = run_memory(
            conversations, Path(tmp) / "bm25", None, database_url=url
        )
        report["bm25_reopened"], _ = run_memory(
            conversations, Path(tmp) / "reopened", None, reopen=True, database_url=url
        )
        if embedder is not None:
            report["hybrid"], tables["hybrid"] = run_memory(
                conversations, Path(tmp) / "hybrid", embedder, database_url=url
            )
            report["hybrid"]["embedder"] = getattr(embedder, "model", "?")  # type: ignore[index]
    base = report["markus_keyword"]["recall_any@10"]  # type: ignore[index]
    header = [f"any@{k}" for k in KS] + [f"all@{k}" for k in KS] + ["ndcg10", "p50ms", "p95ms"]
    print(f"{'':<22}" + " ".join(f"{h:>7}" for h in header))
    for name in ("markus_keyword", "bm25", "bm25_reopened", "hybrid"):
        if name in report:
            summary = report[name]
            print(_row(name, summary))  # type: ignore[arg-type]
            if name != "markus_keyword":
                ratio = summary["recall_any@10"] / base if base else float("inf")  # type: ignore[index]
                summary["recall_any@10_vs_markus"] = round(ratio, 3)  # type: ignore[index]
                print(
                    f"{'':<22}recall_any@10 x{ratio:.2f} vs markus; ingest "
                    f"{summary['ingest_seconds']}s for {summary['turns']} turns; "  # type: ignore[index]
                    f"by category {summary['recall_any@10_by_category']}"  # type: ignore[index]
                )
    print(f"markus_keyword by category {report['markus_keyword']['recall_any@10_by_category']}")  # type: ignore[index]
    print(format_breakdown(tables))
    report["by_conversation"] = {
        name: {row[0]: [round(row[1], 4), round(row[2], 4)] for row in breakdown(results)}
        for name, results in tables.items()
    }
    if args.loo:
        print(_locomo_loo.run(conversations, None))
        if embedder is not None:
            print("with vectors:")
            print(_locomo_loo.run(conversations, embedder))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
