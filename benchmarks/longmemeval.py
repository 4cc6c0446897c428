"""LongMemEval retrieval benchmark for recall_conversation, with plain SQLite FTS5 as baseline.

Usage: python benchmarks/longmemeval.py PATH/longmemeval.json[.gz] [--no-vectors] [--limit N]
[--split-half] [--knobs] [--now] [--vector-cache DIR] [--out results.json]

Every question is one agent with its own haystack: its sessions are appended in date order
through the public API (one Markus session per haystack session, one message per turn, the
session's date as the time of its turns), the agent is closed and reopened, and
``recall_conversation(question, limit=20, neighbours=0)`` is asked. A turn counts only when it
is among the hits themselves. Metrics (the official LongMemEval retrieval ones, turn level):
recall_all@5/@10 (every evidence turn in the top k), recall_any@10, ndcg@10, and session
recall_all@5 (every answer session among the sessions of the top 5 turns), overall and per
question type. The baselines rank the same turns with SQLite FTS5's bm25 in the same run (the
question's words OR-ed), with its default tokenizer (``fts5_bm25``) and with the Porter
stemmer (``fts5_porter``). ``--split-half`` scores the two halves of the
questions (odd and even positions within each question type) apart, so a change that wins on
one half only shows; ``--knobs`` checks each ranking knob split-half (chosen on one half,
scored on the other: ``_longmemeval_knobs.py``). ``--now`` asks each question at its
``question_date`` (``recall_conversation(..., now=...)``: "a week ago" is read against it).
``--vector-cache DIR`` keeps MiniLM's vectors in ``DIR`` across runs (``_vector_cache.py``):
after the first run nothing is embedded again, so the ingest and first-recall times it prints
are not the embedder's then.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _longmemeval_knobs  # noqa: E402
from _locomo_data import ReplayClock  # noqa: E402
from _longmemeval_data import Question, load, scored  # noqa: E402
from _metrics import ndcg, percentile  # noqa: E402
from _recall_fixture import local_embedder  # noqa: E402
from _vector_cache import cached  # noqa: E402
from markus_memory import open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402

DEPTH = 20
METRICS = ("all@5", "all@10", "any@10", "ndcg@10", "sess_all@5")
Ranked = dict[str, list[str]]  # question id -> ranked turn ids


def score(question: Question, ranked: Sequence[str]) -> dict[str, float]:
    """The retrieval metrics of one question's ranked turn ids."""
    evidence = set(question.evidence)
    top5_sessions = {turn_id.rsplit("#", 1)[0] for turn_id in ranked[:5]}
    return {
        "all@5": float(evidence <= set(ranked[:5])),
        "all@10": float(evidence <= set(ranked[:10])),
        "any@10": float(bool(evidence & set(ranked[:10]))),
        "ndcg@10": ndcg(ranked, evidence),
        "sess_all@5": float(question.answer_sessions <= top5_sessions),
    }


def summarize(questions: Sequence[Question], ranked: Ranked) -> dict[str, dict[str, float]]:
    """Mean of each metric over all questions (``"all"``) and per question type."""
    groups: dict[str, list[Question]] = {"all": list(questions)}
    for question in questions:
        groups.setdefault(question.question_type, []).append(question)
    out: dict[str, dict[str, float]] = {}
    for name, members in groups.items():
        rows = [score(q, ranked[q.question_id]) for q in members]
        out[name] = {m: round(statistics.fmean([r[m] for r in rows] or [0.0]), 4) for m in METRICS}
        out[name]["n"] = len(rows)
    return out


def record(mem: object, question: Question, clock: ReplayClock) -> None:
    """Append the haystack to ``mem`` (an ``AgentMemory`` on ``clock``), session by session."""
    sessions = mem.sessions  # type: ignore[attr-defined]
    current = None
    for turn in question.turns:
        clock.now = turn.date
        if turn.session_id != current:
            current = turn.session_id
            sessions.get_or_create(current)
        message = {"role": turn.role, "content": turn.text, "metadata": {"turn": turn.id}}
        sessions.append(current, message)


def run_memory(
    questions: Sequence[Question], home: Path, embedder: object | None, *, now: bool = False
) -> tuple[Ranked, list[float], list[float], float]:
    """Ranked turn ids per question through the public API; query latencies and first-recall
    latencies right after the haystack was recorded (ms; the first does not wait for the
    turns' vectors); seconds spent recording, reopening and making every vector."""
    ranked: Ranked = {}
    latencies: list[float] = []
    firsts: list[float] = []
    ingest = 0.0
    for question in questions:
        clock = ReplayClock()
        settings = Settings(home=home, clock=clock)
        agent = f"lme-{question.question_id}"
        started = time.perf_counter()
        mem = open_agent(agent, settings=settings, embedder=embedder)  # type: ignore[arg-type]
        record(mem, question, clock)
        mem.close()
        mem = open_agent(agent, settings=settings, embedder=embedder)  # type: ignore[arg-type]
        first = time.perf_counter()
        mem.recall_conversation(question.question, limit=DEPTH, neighbours=0)
        firsts.append((time.perf_counter() - first) * 1000)
        mem.catch_up_transcripts()  # every turn with its vector before the scored recall
        ingest += time.perf_counter() - started
        started = time.perf_counter()
        asked = question.date if now else None
        hits = mem.recall_conversation(question.question, limit=DEPTH, neighbours=0, now=asked)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked[question.question_id] = [str(hit.metadata.get("turn")) for hit in hits]
        mem.close()
    return ranked, latencies, firsts, ingest


def fts5_query(text: str) -> str:
    """The question's words, each quoted, OR-ed (FTS5's default is AND)."""
    words = dict.fromkeys(re.findall(r"\w+", text.lower()))
    return " OR ".join(f'"{word}"' for word in words)


FTS5_TOKENIZERS = {"fts5_bm25": "unicode61", "fts5_porter": "porter unicode61"}


def run_fts5(questions: Sequence[Question], tokenizer: str) -> tuple[Ranked, list[float]]:
    """FTS5 bm25 over each question's turns (an in-memory table per question)."""
    ranked: Ranked = {}
    latencies: list[float] = []
    for question in questions:
        db = sqlite3.connect(":memory:")
        db.execute(
            f"CREATE VIRTUAL TABLE turns USING fts5(text, turn UNINDEXED, tokenize='{tokenizer}')"
        )
        db.executemany(
            "INSERT INTO turns(text, turn) VALUES (?, ?)", [(t.text, t.id) for t in question.turns]
        )
        started = time.perf_counter()
        rows = db.execute(
            "SELECT turn FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT ?",
            (fts5_query(question.question), DEPTH),
        ).fetchall()
        latencies.append((time.perf_counter() - started) * 1000)
        ranked[question.question_id] = [row[0] for row in rows]
        db.close()
    return ranked, latencies


def halves(questions: Sequence[Question]) -> tuple[list[Question], list[Question]]:
    """Alternate questions of each type into two halves (stratified split-half)."""
    seen: dict[str, int] = {}
    first: list[Question] = []
    second: list[Question] = []
    for question in questions:
        position = seen.get(question.question_type, 0)
        seen[question.question_type] = position + 1
        (first if position % 2 == 0 else second).append(question)
    return first, second


def table(runs: dict[str, dict[str, dict[str, float]]]) -> str:
    """A row per question type (and all), the metrics of each run side by side."""
    names = list(runs)
    groups = list(next(iter(runs.values())))
    head = f"{'':<27}{'n':>4}" + "".join(f" | {name[:34]:<34}" for name in names)
    sub = f"{'':<31}" + "".join(" | " + " ".join(f"{m[:6]:>6}" for m in METRICS) for _ in names)
    lines = [head, sub]
    for group in ["all", *sorted(g for g in groups if g != "all")]:
        count = int(runs[names[0]][group]["n"])
        cells = "".join(
            " | " + " ".join(f"{runs[name][group][m]:>6.3f}" for m in METRICS) for name in names
        )
        lines.append(f"{group:<27}{count:>4}{cells}")
    return "\n".join(lines)


def _latency(values: Sequence[float]) -> str:
    return f"p50 {statistics.median(values):.2f} ms, p95 {percentile(values, 0.95):.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a LongMemEval-format JSON file (or .json.gz)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/longmemeval.json"))
    parser.add_argument("--no-vectors", action="store_true", help="skip the hybrid run")
    parser.add_argument("--limit", type=int, help="only the first N scored questions")
    parser.add_argument("--split-half", action="store_true", help="score two halves apart")
    parser.add_argument("--knobs", action="store_true", help="split-half check of each knob")
    parser.add_argument("--now", action="store_true", help="ask at each question's date")
    parser.add_argument("--vector-cache", type=Path, help="keep vectors here across runs")
    args = parser.parse_args(argv)
    questions = [q for q in load(args.path) if scored(q)][: args.limit]
    runs: dict[str, Ranked] = {}
    report: dict[str, object] = {"data": str(args.path), "questions": len(questions)}
    for name, tokenizer in FTS5_TOKENIZERS.items():
        runs[name], latencies = run_fts5(questions, tokenizer)
        print(f"{name}: {_latency(latencies)}")
    embedder = cached(local_embedder(not args.no_vectors), args.vector_cache)
    with tempfile.TemporaryDirectory() as tmp:
        variants: list[tuple[str, object | None]] = [("recall", None)]
        if embedder is not None:
            variants.append(("recall_minilm", embedder))
        for name, model in variants:
            ranked, latencies, firsts, ingest = run_memory(
                questions, Path(tmp) / name, model, now=args.now
            )
            runs[name] = ranked
            turns = sum(len(q.turns) for q in questions)
            per_turn = ingest / turns * 1000 if turns else 0.0
            print(f"{name}: {_latency(latencies)}; first recall {_latency(firsts)}")
            print(f"{name}: ingest {ingest:.1f} s ({per_turn:.3f} ms a turn)")
            report[f"{name}_latency_median_ms"] = round(statistics.median(latencies), 3)
            report[f"{name}_first_recall_median_ms"] = round(statistics.median(firsts), 3)
            report[f"{name}_ingest_ms_per_turn"] = round(per_turn, 4)
    splits: list[tuple[str, Sequence[Question]]] = [("", questions)]
    if args.split_half:
        first, second = halves(questions)
        splits += [(" (half A)", first), (" (half B)", second)]
    for label, subset in splits:
        summaries = {name: summarize(subset, ranked) for name, ranked in runs.items()}
        print(f"\nLongMemEval{label}, {len(subset)} questions")
        print(table(summaries))
        report[f"summary{label.strip()}"] = summaries
    if args.knobs:
        print("\nknobs, split-half (no extras):")
        print(_longmemeval_knobs.run(questions, None))
        if embedder is not None:
            print("knobs, split-half (with vectors):")
            print(_longmemeval_knobs.run(questions, embedder))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
