"""Leave-one-conversation-out check of every ranking knob, on the engine directly.

Each conversation is indexed once (``ConversationIndex``, same turns as the end-to-end run);
each knob is then swept over its grid with the other knobs at their defaults, and
``_locomo_tables.leave_one_out`` picks its value on three conversations and scores it on the
fourth, beside the knob switched off (its first grid value). Query vectors are memoised so
a sweep embeds each question once.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from _locomo_data import LocomoConversation
from _locomo_tables import Result, format_folds, leave_one_out
from markus_memory.search.conversation import ConversationIndex, RankingOptions, Turn
from markus_memory.search.recall import default_options
from markus_memory.storage._sqlite.store import SqliteStore

# The knobs this ranking added, with the grid each is tuned over (the first value is "off").
KNOBS: dict[str, tuple[object, ...]] = {
    "date_boost": (0.0, 0.25, 0.5, 1.0, 2.0),
    "turn_speaker_boost": (0.0, 0.25, 0.5, 0.75, 1.0),
    "person_boost": (0.0, 0.25, 0.5, 1.0),
    "counting_spread": (0.0, 0.1, 0.2, 0.3),
}
VECTOR_KNOBS: dict[str, tuple[object, ...]] = {
    "fusion": ("score", "rrf"),
    "rrf_k": (60, 5, 10, 15, 20),
    "session_weight": (0.3, 0.45, 0.6),
    "vector_weight": (0.0, 0.2, 0.3, 0.5, 0.6, 0.8),
    "dense_first_person": (False, True),
    "nearest_lift": (0.0, 0.05, 0.1, 0.15, 0.2),
    "nearest_top": (0, 5, 10),
    "dense_person_boost": (0.0, 0.25, 0.5, 1.0),
    "dense_short_power": (0.0, 0.25, 0.5, 1.0),
}


class _Memo:
    """An embedder that remembers the vectors of texts it has embedded."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self.model = inner.model  # type: ignore[attr-defined]
        self.dimension = inner.dimension  # type: ignore[attr-defined]
        self._seen: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [text for text in dict.fromkeys(texts) if text not in self._seen]
        if missing:
            for text, vector in zip(missing, self._inner.embed(missing), strict=True):  # type: ignore[attr-defined]
                self._seen[text] = vector
        return [self._seen[text] for text in texts]


def build(conv: LocomoConversation, embedder: object | None, home: Path) -> ConversationIndex:
    store = SqliteStore(home / f"{conv.sample_id}.db")
    index = ConversationIndex(store.transcripts, conv.sample_id, embedder=embedder)  # type: ignore[arg-type]
    index.add(
        Turn(
            f"session_{t.session}",
            t.position,
            "user" if t.speaker == conv.speakers[0] else "assistant",
            t.text,
            t.date,
            t.speaker,
            {"dia_id": t.dia_id},
        )
        for t in conv.turns
    )
    return index


def score(
    indexes: Sequence[tuple[LocomoConversation, ConversationIndex]],
    options: RankingOptions,
    depth: int = 10,
    latencies: list[float] | None = None,
) -> list[Result]:
    out: list[Result] = []
    for conv, index in indexes:
        index.options = options
        for question in conv.questions:
            started = time.perf_counter()
            hits = index.search(question.question, limit=depth)
            if latencies is not None:
                latencies.append((time.perf_counter() - started) * 1000)
            ranked = [str(hit.turn.metadata["dia_id"]) for hit in hits]
            out.append((conv.sample_id, question.category, ranked, set(question.evidence)))
    return out


def _cost(
    indexes: Sequence[tuple[LocomoConversation, ConversationIndex]], base: RankingOptions
) -> str:
    """Median query time with the added stages on and off, interleaved in this process."""
    before = replace(base, **{knob: values[0] for knob, values in KNOBS.items()}, speaker_boost=1.0)
    times: dict[str, list[float]] = {"defaults": [], "added stages off": []}
    score(indexes, base)  # fills the query-vector memo: neither side pays for embedding
    for _ in range(2):
        score(indexes, base, latencies=times["defaults"])
        score(indexes, before, latencies=times["added stages off"])
    cells = ", ".join(f"{name} {statistics.median(v):.2f} ms" for name, v in times.items())
    return f"median query on the engine (query vectors memoised): {cells}"


def run(conversations: Sequence[LocomoConversation], embedder: object | None) -> str:
    """The LOO table of every knob, for the defaults with (or without) ``embedder``."""
    memo = _Memo(embedder) if embedder is not None else None
    home = tempfile.TemporaryDirectory()
    indexes = [(conv, build(conv, memo, Path(home.name))) for conv in conversations]
    base = default_options(memo)  # type: ignore[arg-type]
    knobs = dict(KNOBS)
    if memo is not None:
        knobs.update(VECTOR_KNOBS)
    ids = [conv.sample_id for conv in conversations]
    blocks = [_cost(indexes, base)]
    for knob, values in knobs.items():

        def sweep(value: object, knob: str = knob) -> list[Result]:
            return score(indexes, replace(base, **{knob: value}))

        blocks.append(format_folds(knob, leave_one_out(ids, values, values[0], sweep)))
    for _, index in indexes:
        index.store.database.close()
    home.cleanup()
    return "\n".join(blocks)
