"""The transcript writer pool writes the appends of several agents on one database in one
transaction (one per agent made a host with hundreds of agents commit a few messages at a
time), keeps each agent's order, and tells every writer of a failed transaction."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

from markus_memory.search.transcript_pool import Item, WriterPool, WriterQueue
from markus_memory.storage.base import Together
from markus_memory.storage.repos.transcripts import TranscriptMessage

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Database:
    """Numbers its transactions; the first waits for ``gate`` (so appends pile up meanwhile)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.current: int | None = None
        self.numbers = itertools.count()
        self.gate = threading.Event()
        self.fail = fail

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.current = next(self.numbers)
        if self.current == 0:
            self.gate.wait(30)
        yield
        self.current = None
        if self.fail:
            raise RuntimeError("commit failed")


class Recorder:
    """A writer recording which transaction wrote each of its appends."""

    def __init__(self, database: Database, name: str) -> None:
        self.database = database
        self.name = name
        self.seen: list[tuple[int | None, int]] = []
        self.done: list[int] = []
        self.misses = 0

    def together(self) -> Together:
        return Together(self.database, self.database.transaction)

    def write(self, batch: list[Item]) -> None:
        self.seen += [(self.database.current, message.seq) for message, _ in batch]

    def written(self, batch: list[Item]) -> None:
        self.done += [message.seq for message, _ in batch]

    def missed(self) -> None:
        self.misses += 1


def item(agent: str, seq: int) -> Item:
    return TranscriptMessage(agent, "chat", seq, "user", f"turn {seq}", NOW), NOW


def run(database: Database, agents: int, appends: int) -> list[Recorder]:
    pool = WriterPool(size=1)
    writers = [Recorder(database, f"agent{n}") for n in range(agents)]
    queues = [WriterQueue(pool, lambda w=w: w) for w in writers]  # type: ignore[misc]
    queues[0].put(item("agent0", 0))  # its transaction waits at the gate
    for seq, (w, q) in itertools.product(range(appends), zip(writers, queues, strict=True)):
        if (w.name, seq) != ("agent0", 0):
            q.put(item(w.name, seq))
    database.gate.set()
    for q in queues:
        q.drain()
        q.release()
    return writers


def test_appends_of_many_agents_share_a_transaction_in_order() -> None:
    writers = run(Database(), agents=20, appends=5)
    for w in writers:
        assert [seq for _, seq in w.seen] == list(range(5))
        assert w.done == list(range(5)) and w.misses == 0
    later = {number for w in writers for number, seq in w.seen if number != 0}
    # 99 appends waited while the first was written: they take a transaction or two of
    # MAX_GROUP appends, not one per agent (20) or per append (99).
    assert len(later) <= 2, later


def test_a_failed_transaction_is_reported_to_every_writer_in_it() -> None:
    writers = run(Database(fail=True), agents=6, appends=3)
    for w in writers:
        assert w.misses >= 1  # the next recall imports the session files
        assert w.done == list(range(3))  # given up on, in order: nothing waits for them
