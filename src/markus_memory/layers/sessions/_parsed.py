"""One bound, for the whole process, on the session messages held parsed in memory.

A :class:`~._store.SessionStore` keeps the sessions it used last parsed, so that an append or a
read parses nothing. A server holds many agents open, and held for each of them that memory
grows with the agents (about 0.7 MB an agent at 2,000 short turns). :class:`ParsedSessions`
counts the parsed sessions of every store of the process by the bytes of their files, least
recently used first; past its bound the oldest are released by their store: their messages
dropped, what an append needs kept (where the files stand, how many messages they hold). An
append to a released session writes its journal line as before, without parsing; a read
parses it again.

Releasing needs only the in-process part of the owner's lock, taken without waiting: a store
busy in another thread keeps its session for now (no lock order, no deadlock).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Protocol

PARSED_SESSION_BYTES = 16 << 20
"""The file bytes (checkpoint + journal) of the sessions held parsed, all agents together.

Parsed, a session takes about three times its file bytes. 16 MiB holds 80 sessions of
2,000 short chat turns, or the working set of one agent with long sessions."""


class Releases(Protocol):
    def release_parsed(self, session_id: str) -> bool:
        """Drop the parsed messages of ``session_id`` if no other thread is using the store;
        False when it is busy (kept for now)."""


class ParsedSessions:
    """The parsed sessions of every store, by size, least recently used first."""

    def __init__(self, max_bytes: int = PARSED_SESSION_BYTES) -> None:
        self.max_bytes = max_bytes
        self._guard = threading.Lock()
        self._held: OrderedDict[tuple[int, str], tuple[weakref.ref[Releases], int]] = OrderedDict()
        self._total = 0

    @property
    def total(self) -> int:
        """The file bytes of the sessions held parsed now."""
        return self._total

    def use(self, owner: Releases, session_id: str, size: int) -> None:
        """``owner`` holds ``session_id`` parsed (``size`` file bytes) and just used it; the
        least recently used others are released while the total is over the bound."""
        key = (id(owner), session_id)
        with self._guard:
            previous = self._held.pop(key, None)
            if previous is not None:
                self._total -= previous[1]
            self._held[key] = (weakref.ref(owner), size)
            self._total += size
            victims = self._oldest_over_bound(key)
        for victim_key, ref in victims:
            store = ref()
            if store is None:
                self._drop(victim_key, ref)
            else:
                store.release_parsed(victim_key[1])

    def drop(self, owner: Releases, session_id: str) -> None:
        """``owner`` no longer holds ``session_id`` parsed."""
        key = (id(owner), session_id)
        with self._guard:
            found = self._held.get(key)
            if found is not None and found[0]() is owner:
                del self._held[key]
                self._total -= found[1]

    def _drop(self, key: tuple[int, str], ref: weakref.ref[Releases]) -> None:
        with self._guard:
            found = self._held.get(key)
            if found is not None and found[0] is ref:
                del self._held[key]
                self._total -= found[1]

    def _oldest_over_bound(
        self, keep: tuple[int, str]
    ) -> list[tuple[tuple[int, str], weakref.ref[Releases]]]:
        excess = self._total - self.max_bytes
        victims = []
        for key, (ref, size) in self._held.items():
            if excess <= 0:
                break
            if key != keep:
                victims.append((key, ref))
                excess -= size
        return victims


PARSED = ParsedSessions()
"""The bound every SessionStore of the process shares unless given its own."""
