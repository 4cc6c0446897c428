"""memory_search latency on a full store: 500 observations, curated part at its 15000-char cap.

Run: ``python benchmarks/bench_search.py [--real-embedder]``. Prints median and p95 per query for

* ``keyword_search`` (the original algorithm as a pure function, recomputing haystacks per call —
  the baseline, like ``MemoryStore.search``),
* the searcher without index (prepared corpus, original ranking),
* the default searcher (keyword + BM25, no embedder),
* hybrid (keyword + BM25 + vectors, query embedding included) with the deterministic fake
  embedder, or with ``--real-embedder`` the local model from ``search.embedders`` when present,

and through ``AgentMemory.search`` when the knowledge layer is available (file read included).
The corpus version is fixed, so index sync is the cheap "unchanged" check, as on a real store
between writes.
"""

from __future__ import annotations

import hashlib
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from benchmarks.search_fixture import Fixture, build  # noqa: E402
from markus_memory.config import Settings  # noqa: E402
from markus_memory.layers.knowledge import CuratedSection, Observation  # noqa: E402
from markus_memory.memory import AgentMemory  # noqa: E402
from markus_memory.search.keyword import keyword_search, tokenize  # noqa: E402
from markus_memory.search.memory_search import MemorySearcher  # noqa: E402
from markus_memory.storage.knowledge_schema import open_sqlite_index  # noqa: E402

ROUNDS = 15


class HashEmbedder:
    """Deterministic hashed bag of words, 384 dims (the width of MiniLM), no model needed."""

    model = "bench-hash"
    dimension = 384

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            for token in tokenize(text):
                digest = hashlib.blake2b(token.encode(), digest_size=4).digest()
                vec[int.from_bytes(digest, "big") % self.dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


def measure(
    cases: dict[str, Callable[[str], object]], queries: Sequence[str]
) -> dict[str, tuple[float, float]]:
    """Median and p95 (ms) per case. Rounds interleave the cases, so machine load hits all alike."""
    for fn in cases.values():
        for q in queries:  # warm-up: index sync, vector load, caches
            fn(q)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, fn in cases.items():
            for q in queries:
                start = time.perf_counter()
                fn(q)
                samples[name].append(time.perf_counter() - start)
    out = {}
    for name, values in samples.items():
        values.sort()
        out[name] = (statistics.median(values) * 1000, values[int(len(values) * 0.95)] * 1000)
    return out


def main(real: Any = None) -> None:
    fixture = build()
    queries = [q.query for q in fixture.queries]
    three_word = ["deploy billing service"]
    obs, secs = fixture.observations, fixture.sections
    tmp = Path(tempfile.mkdtemp())
    index = open_sqlite_index(tmp / "data.db")
    version = "v1"
    embedder, label = HashEmbedder(), "fake hash embedder, 384 dims"
    if real is not None:
        embedder, label = real, f"local model {real.model}"
    elif "--real-embedder" in sys.argv:
        embedder, label = _real_embedder()

    plain = MemorySearcher("bench", None)
    default = MemorySearcher("bench", index)
    hybrid = MemorySearcher("hybrid", index, embedder)
    cases: dict[str, Callable[[str], object]] = {
        "original keyword_search (baseline)": lambda q: keyword_search(q, obs, secs),
        "searcher, keyword only (no index)": lambda q: plain.search(q, obs, secs, version=version),
        "searcher, keyword+BM25 (default)": lambda q: default.search(q, obs, secs, version=version),
        f"hybrid ({label})": lambda q: hybrid.search(q, obs, secs, version=version),
    }
    cases[f"query embedding alone ({label})"] = lambda q: embedder.embed([q])
    agent, agent_hybrid = _agent_store(tmp, fixture, embedder)
    # Embed every document up front: the measured searches embed only their query.
    hybrid.sync(hybrid.corpus(obs, secs, version), version)
    agent_hybrid.rebuild_search_index()
    cases["AgentMemory.search, keyword+BM25"] = lambda q: agent.search(q)
    cases[f"AgentMemory.search, hybrid ({label})"] = lambda q: agent_hybrid.search(q)
    print(
        f"store: {len(obs)} observations, curated {fixture.curated_chars} chars; "
        f"{len(queries)} labelled queries x {ROUNDS} rounds"
    )
    for qs, qname in ((queries, "labelled queries"), (three_word * 20, "one 3-word query")):
        print(f"-- {qname}")
        results = measure(cases, qs)
        baseline = next(iter(results.values()))[0]
        for name, (median, p95) in results.items():
            print(
                f"{name:66s} median {median:7.3f} ms  p95 {p95:7.3f} ms  "
                f"x{median / baseline:5.2f} of baseline"
            )


def _agent_store(tmp: Path, fixture: Fixture, embedder: object) -> tuple[Any, Any]:
    """Two handles on one real agent dir whose knowledge.md holds the whole fixture."""
    settings = Settings(home=tmp / "home")
    agent = AgentMemory("bench", settings)
    with agent.knowledge.transaction() as doc:
        doc.sections = [CuratedSection(s.name, s.body) for s in fixture.sections]
        doc.observations = [
            Observation(o.id, o.type, o.content, o.timestamp, o.tags) for o in fixture.observations
        ]
    assert len(agent.knowledge.observations()) == len(fixture.observations)
    return agent, AgentMemory("bench", settings, embedder=embedder)  # type: ignore[arg-type]


def _real_embedder() -> tuple[object, str]:
    from markus_memory.search.embedders import MiniLMEmbedder  # type: ignore[import-not-found]

    local = MiniLMEmbedder(threads=1)  # one thread: 11 ms vs 30 ms per query under load
    return local, f"local model {local.model}"


if __name__ == "__main__":
    main()
