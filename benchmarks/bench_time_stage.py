"""Recall of the LoCoMo questions that name a time, with the time stage reading only each
candidate's text and time (``recall_said``) against reading whole messages (the baseline).

Usage: python benchmarks/bench_time_stage.py PATH/locomo.json [--rounds 3]
                                             [--database-url postgresql://...]

Every conversation becomes one agent (as in ``locomo.py``, without vectors). Each question
that names a time is asked ``--rounds`` times with each variant, the two interleaved question
by question in this process; the script prints both medians, their ratio and how many answers
were the same (hits and scores).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))

from _locomo_data import ReplayClock, load, record  # noqa: E402
from markus_memory import open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402
from markus_memory.search.conversation import ConversationIndex  # noqa: E402
from markus_memory.search.temporal import (  # noqa: E402
    named_times,
    question_times,
    temporal_boost,
)

Scores = dict[int, float]


def whole_messages(
    self: ConversationIndex, query: str, scores: Scores, now: datetime | None
) -> Scores:
    """The time stage as before: every candidate fetched as a whole message."""
    wanted = question_times(query, now) if scores else []
    if self.options.date_boost <= 0 or not wanted:
        return scores
    said = self.store.recall_turns(self.agent_id, list(scores))

    def text_and_time(rowid: int) -> tuple[str, datetime | None]:
        message = said.get(rowid)
        return ("", None) if message is None else (message.content, message.created_at)

    return temporal_boost(wanted, scores, text_and_time, date_boost=self.options.date_boost)


def answer(mem: Any, question: str) -> tuple[float, list[tuple[object, float]]]:
    started = time.perf_counter()
    hits = mem.recall_conversation(question, limit=10, neighbours=0)
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, [(hit.metadata.get("dia_id"), round(hit.score, 9)) for hit in hits]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {"now": [], "before": []}
    same = asked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, conv in enumerate(load(args.path)):
            clock = ReplayClock()
            settings = Settings(home=Path(tmp), clock=clock, database_url=args.database_url)
            with open_agent(f"time-stage-{n}-{Path(tmp).name}", settings=settings) as mem:
                record(mem, conv, clock)
                mem.recall_conversation("warm up", limit=1)
                dated = [q.question for q in conv.questions if named_times(q.question)]
                for turn, question in enumerate(dated * args.rounds):
                    order = ("now", "before") if turn % 2 else ("before", "now")
                    got = {}
                    for variant in order:
                        if variant == "now":
                            elapsed, got[variant] = answer(mem, question)
                        else:
                            with mock.patch.object(ConversationIndex, "_dated", whole_messages):
                                elapsed, got[variant] = answer(mem, question)
                        times[variant].append(elapsed)
                    same += got["now"] == got["before"]
                    asked += 1
    now, before = statistics.median(times["now"]), statistics.median(times["before"])
    backend = "PostgreSQL" if args.database_url else "SQLite"
    print(
        f"{backend}: {asked // max(args.rounds, 1)} questions naming a time, {args.rounds} rounds: "
        f"recall median {now:.2f} ms with recall_said, {before:.2f} ms reading whole messages "
        f"({now / before:.2f}x); the same hits and scores for {same}/{asked}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
