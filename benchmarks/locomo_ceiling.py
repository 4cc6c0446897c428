"""How far LoCoMo's recall_all@10 can go by choosing among the ranking's settings.

Usage: python benchmarks/locomo_ceiling.py PATH/locomo.json [--minilm] [--vector-cache DIR]

On the engine (the indexes ``_locomo_loo`` builds, the same turns as ``locomo.py``), every
setting of a grid over the ranking's main knobs is scored, and the script prints:

- recall_all@k of the defaults at k = 10, 20, 50 and 200 (200 is every candidate the
  ranking takes: what no reorder of them can pass);
- the best single setting of the grid;
- the best setting for each question category, chosen on that category's own questions
  (what a router that knew each question's kind, tuned in-sample, would reach);
- the best setting for each question (a bound no ranking of these stages reaches).

``recall_all`` is over the questions that have evidence, as ``locomo.py`` counts it.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _locomo_data import CATEGORIES, load  # noqa: E402
from _locomo_loo import _Memo, build, score  # noqa: E402
from _locomo_tables import Result, all_found, recall  # noqa: E402
from _recall_fixture import local_embedder  # noqa: E402
from _vector_cache import cached  # noqa: E402
from markus_memory.search.recall import default_options  # noqa: E402

# Each grid's first values are the defaults of its ranking.
LEXICAL_GRID: dict[str, tuple[object, ...]] = {
    "neighbour_weight": (0.5, 0.0, 0.25, 0.75),
    "session_weight": (0.3, 0.0, 0.6),
    "turn_speaker_boost": (0.5, 0.0, 1.0),
    "person_boost": (0.5, 0.0, 1.0),
}
HYBRID_GRID: dict[str, tuple[object, ...]] = {
    "vector_weight": (0.6, 0.3, 1.0, 1.5, 2.5),
    "neighbour_weight": (0.5, 0.0, 0.25),
    "session_weight": (0.45, 0.0, 0.9),
    "rrf_k": (10, 60),
}
DEPTHS = (10, 20, 50, 200)

Setting = tuple[object, ...]


def ceilings(runs: Mapping[Setting, Sequence[Result]]) -> dict[str, float]:
    """recall_all@10 of the first setting, the best one, the best per category, the best
    per question; every run lists the same questions in the same order."""
    settings = list(runs)
    rows = [i for i, row in enumerate(runs[settings[0]]) if row[3]]
    total = len(rows) or 1

    def hits(setting: Setting, among: Sequence[int]) -> int:
        return sum(all_found(runs[setting][i]) for i in among)

    by_category: dict[int, list[int]] = {}
    for i in rows:
        by_category.setdefault(runs[settings[0]][i][1], []).append(i)
    return {
        "defaults": hits(settings[0], rows) / total,
        "best setting": max(hits(s, rows) for s in settings) / total,
        "best per category": sum(
            max(hits(s, among) for s in settings) for among in by_category.values()
        )
        / total,
        "best per question": sum(any(all_found(runs[s][i]) for s in settings) for i in rows)
        / total,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--minilm", action="store_true", help="rank with the local MiniLM")
    parser.add_argument("--vector-cache", type=Path, help="keep vectors here across runs")
    args = parser.parse_args(argv)
    conversations = load(args.path)
    embedder = cached(local_embedder(args.minilm), args.vector_cache)
    memo = _Memo(embedder) if embedder is not None else None
    grid = HYBRID_GRID if memo is not None else LEXICAL_GRID
    with tempfile.TemporaryDirectory() as home:
        indexes = [(conv, build(conv, memo, Path(home))) for conv in conversations]
        base = default_options(memo)  # type: ignore[arg-type]
        deep = score(indexes, base, depth=max(DEPTHS))
        runs = {
            setting: score(indexes, replace(base, **dict(zip(grid, setting, strict=True))))
            for setting in itertools.product(*grid.values())
        }
        for _, index in indexes:
            index.store.database.close()
    print(f"ranking: {'MiniLM' if memo is not None else 'no extras'}; grid {dict(grid)}")
    print("defaults, recall_all@k: " + ", ".join(f"@{k} {recall(deep, k)[1]:.3f}" for k in DEPTHS))
    best = max(runs, key=lambda s: recall(runs[s])[1])
    print(f"best setting {dict(zip(grid, best, strict=True))}")
    for category, name in CATEGORIES.items():
        among = [row for row in deep if row[1] == category]
        cells = ", ".join(f"@{k} {recall(among, k)[1]:.3f}" for k in DEPTHS)
        print(f"  {name:<12} defaults, recall_all: {cells}")
    for label, value in ceilings(runs).items():
        print(f"recall_all@10, {label}: {value:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
