"""How much the inverted vector lists lose on real sentence embeddings: the turns of the LoCoMo
conversations embedded with the local MiniLM, clustered as ``storage/recall/vector_lists.py`` does,
and each question's 10 nearest turns read through its nearest lists against all of them.

Usage: python benchmarks/bench_vector_lists.py PATH/locomo.json [--lists 32 64 128]

A development split holds about 2,000 turns, far below the 20,000 from which the store makes
lists, so this is a scaled-down check of the share read: for each number of lists, recall@10
(the share of the exact 10 nearest found) when the nearest 6%, 12%, 17% and 25% of the lists
are read. The store reads about 2·√lists of them (24 of 141 lists at 20,000 vectors, 17%; 64
of 1,024 at a million, 6%) and adds the question's lexical candidates, which this leaves out.
Needs the ``[semantic]`` extra.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402

from _locomo_data import load  # noqa: E402
from markus_memory.search.embedders import MiniLMEmbedder  # noqa: E402
from markus_memory.storage.recall import vector_lists  # noqa: E402

SHARES = (0.06, 0.12, 0.17, 0.25)


def recall_at_10(turns: np.ndarray, questions: np.ndarray, lists: int, share: float) -> float:
    centres = vector_lists.train(turns, lists)
    member = np.argmax(turns @ centres.T, axis=1)
    exact = np.argsort(-(questions @ turns.T), axis=1, kind="stable")[:, :10]
    probes = max(1, round(len(centres) * share))
    found = []
    for question, best in zip(questions, exact, strict=True):
        read = np.flatnonzero(np.isin(member, np.argsort(-(centres @ question))[:probes]))
        top = read[np.argsort(-(turns[read] @ question), kind="stable")[:10]]
        found.append(len(set(top.tolist()) & set(best.tolist())) / 10)
    return float(np.mean(found))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--lists", type=int, nargs="+", default=[32, 64, 128])
    args = parser.parse_args(argv)
    conversations = load(args.path)
    embedder = MiniLMEmbedder()
    turns = np.asarray(
        embedder.embed([t.text for c in conversations for t in c.turns]), dtype=np.float32
    )
    questions = np.asarray(
        embedder.embed([q.question for c in conversations for q in c.questions]),
        dtype=np.float32,
    )
    print(f"{len(turns)} turns, {len(questions)} questions, MiniLM; recall@10 through the lists")
    print("lists  " + "  ".join(f"read {share:.0%}" for share in SHARES))
    for lists in args.lists:
        cells = [f"{recall_at_10(turns, questions, lists, share):8.3f}" for share in SHARES]
        print(f"{lists:5d}  " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
