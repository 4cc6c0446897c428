"""Which ranking stage earns its place: LoCoMo recall with each stage of the engine switched on.

Usage: python benchmarks/locomo_ablation.py PATH/locomo.json [--vectors]

Runs the transcript engine (``search.conversation.ConversationIndex``) directly on the turns
(same ingestion as ``locomo.py``: one session per LoCoMo session, speaker in the turn), adding
one stage at a time, and prints recall_any@10 / recall_all@10 / NDCG@10 / median latency.
Tune only on the development split.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _locomo_data import LocomoConversation, load  # noqa: E402
from _locomo_loo import build  # noqa: E402
from _metrics import summarize  # noqa: E402
from markus_memory.search.conversation import ConversationIndex, RankingOptions  # noqa: E402

OFF = RankingOptions(
    strip_speaker_names=False,
    speaker_boost=0.0,
    neighbour_weight=0.0,
    session_weight=0.0,
    vector_weight=0.0,
    dense_speaker_boost=0.0,
    turn_speaker_boost=0.0,
    date_boost=0.0,
    nearest_lift=0.0,
)
STAGES: list[tuple[str, dict[str, object]]] = [
    ("bm25 (stop words out)", {}),
    ("+ speaker boost", {"strip_speaker_names": True, "turn_speaker_boost": 0.5}),
    ("+ neighbours (1, 0.3)", {"neighbour_weight": 0.3, "neighbour_window": 1}),
    ("+ neighbours (2, 0.5)", {"neighbour_weight": 0.5, "neighbour_window": 2}),
    ("+ session prior 0.3", {"session_weight": 0.3}),
    ("+ time stage 0.5", {"date_boost": 0.5}),
]
VECTOR_STAGES: list[tuple[str, dict[str, object]]] = [
    ("+ vectors, rrf", {"vector_weight": 0.5, "fusion": "rrf"}),
    ("+ vectors, score 0.3", {"vector_weight": 0.3, "fusion": "score"}),
    ("+ speaker boost on vectors", {"dense_speaker_boost": 1.0}),
    ("+ nearest 5 lifted 0.15", {"nearest_lift": 0.15, "nearest_top": 5}),
]


def evaluate(indexes: list[tuple[LocomoConversation, ConversationIndex]]) -> dict[str, object]:
    results, latencies = [], []
    for conv, index in indexes:
        for question in conv.questions:
            started = time.perf_counter()
            hits = index.search(question.question, limit=20)
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = [str(hit.turn.metadata["dia_id"]) for hit in hits]
            results.append((question.category, ranked, set(question.evidence)))
    return summarize(results, latencies)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--vectors", action="store_true", help="add MiniLM stages ([semantic])")
    args = parser.parse_args(argv)
    embedder = None
    stages = list(STAGES)
    if args.vectors:
        from markus_memory.search.embedders import MiniLMEmbedder

        embedder = MiniLMEmbedder()
        stages += VECTOR_STAGES
    home = tempfile.TemporaryDirectory()
    indexes = [(conv, build(conv, embedder, Path(home.name))) for conv in load(args.path)]
    options = OFF
    print(f"{'stage':<30}{'any@10':>8}{'all@10':>8}{'ndcg10':>8}{'p50 ms':>8}")
    for name, change in stages:
        options = replace(options, **change)  # type: ignore[arg-type]
        for _, index in indexes:
            index.options = options
        summary = evaluate(indexes)
        print(
            f"{name:<30}{summary['recall_any@10']:>8.3f}{summary['recall_all@10']:>8.3f}"
            f"{summary['ndcg@10']:>8.3f}{summary['latency_median_ms']:>8.2f}"
        )
    for _, index in indexes:
        index.store.database.close()
    home.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
