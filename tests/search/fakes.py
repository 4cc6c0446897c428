"""Test doubles for search: plain observation/section records and a deterministic embedder."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from markus_memory.search.keyword import tokenize

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Obs:
    id: str
    content: str
    type: str = "fact"
    tags: tuple[str, ...] = ()
    timestamp: datetime = T0


@dataclass(frozen=True)
class Sec:
    name: str
    body: str


@dataclass
class FakeKnowledge:
    """A KnowledgeDoc-like store: observations + curated sections, with a version per change."""

    observations: list[Obs] = field(default_factory=list)
    sections: list[Sec] = field(default_factory=list)
    revision: int = 0

    @property
    def version(self) -> str:
        return f"rev{self.revision}"

    def add(self, content: str, type: str = "fact", tags: tuple[str, ...] = ()) -> Obs:
        n = self.revision
        obs = Obs(f"obs_{n:06d}", content, type, tags, T0 + timedelta(minutes=n))
        self.observations.append(obs)
        self.revision += 1
        return obs

    def edit(self, obs_id: str, content: str) -> None:
        self.observations = [
            Obs(o.id, content, o.type, o.tags, o.timestamp) if o.id == obs_id else o
            for o in self.observations
        ]
        self.revision += 1

    def trim(self, keep: int) -> None:
        self.observations = self.observations[-keep:]
        self.revision += 1


class FakeEmbedder:
    """Hashed bag of search tokens: texts sharing words get cosine > 0; fully deterministic."""

    def __init__(self, name: str = "fake", dimensions: int = 256, *, fail: bool = False) -> None:
        self.model = name
        self.dimension = dimensions
        self.fail = fail
        self.calls = 0
        self.texts_embedded = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.fail:
            raise RuntimeError("embedding backend down")
        self.texts_embedded += len(texts)
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            for token in tokenize(text):
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "big")
                vec[h % self.dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


class WrongWidthEmbedder(FakeEmbedder):
    """Declares one width and returns another (a misconfigured adapter)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [v[:-1] for v in super().embed(texts)]
