"""Markus keyword search: the original tokenizer and scoring plus CJK bigrams.

Pure functions over plain records: observations and curated sections come in as data (anything
shaped like :class:`ObservationLike` / :class:`SectionLike`), nothing here touches a file.

Decisions where the original was silent or buggy:

* Token length is measured in UTF-16 code units, as JavaScript did (one astral character counts 2).
* CJK runs (Han, kana, Hangul) inside a token additionally yield their overlapping bigrams, and a
  piece that is one single CJK character is kept as a token (the original: phrases only).
* Combining marks belong to their word (the original split "दिल्ली" at its vowel signs into
  pieces too short to search), and the words the one analyser (:mod:`markus_memory.analysis`)
  adds are tokens too: each emoji and each dotted name ("a.b.c", which the original split into
  one-letter pieces it dropped). Other text tokenizes exactly as in the original.
* Two curated sections whose names slug to the same id get ``_2``, ``_3``… suffixes (the original
  emitted duplicate ids, which no caller can tell apart).
* A token matches at the start of a word only (the original matched substrings, so "we" in a
  question hit every "answers"): no letter, digit, ``_``, ``+`` or ``-`` may precede it. A token
  shorter than :data:`PREFIX_MIN_CHARS` must be a whole word ("we" misses "were"); a longer one
  may begin a longer word, so "postgres" still finds "PostgreSQL" and "deploy" "deployment".
  Tokens with CJK characters still match inside a run, which has no spaces between words; the
  whole-query phrase bonus follows the same rules.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from itertools import compress
from typing import Literal, Protocol

from ..analysis import combining_marks, words

CURATED_PREFIX = "curated_"
CURATED_TYPE = "fact"
Source = Literal["observation", "curated"]
"""Where a hit comes from: an observation, or a curated section of knowledge.md."""
SOURCE_CURATED: Source = "curated"
SOURCE_OBSERVATION: Source = "observation"
DEFAULT_CURATED_BOOST = 0.25
DEFAULT_PREVIEW_CHARS = 2500
PREVIEW_ELLIPSIS = "\n\u2026"
OBSERVATIONS_SECTION = "_observations"

# Python's \w is exactly \p{L} | \p{N} | "_" (checked over every code point), so this is the
# original's [^\p{L}\p{N}_+\-]+ separator.
_SEPARATORS = re.compile(r"[^\w+\-]+")
CJK_RUN = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B-G
    "]+"
)
_SLUG_RUN = re.compile(r"[^a-z0-9\u4e00-\u9fff]+")


class ObservationLike(Protocol):
    """What keyword search needs from an observation (the knowledge layer's record fits)."""

    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def timestamp(self) -> datetime: ...
    @property
    def tags(self) -> Sequence[str]: ...


class SectionLike(Protocol):
    """What keyword search needs from a curated knowledge.md section."""

    @property
    def name(self) -> str: ...
    @property
    def body(self) -> str: ...


@dataclass(frozen=True)
class KeywordHit:
    """One keyword match: an observation or a curated section (``source == "curated"``)."""

    id: str
    type: str
    content: str
    timestamp: datetime | None
    tags: tuple[str, ...]
    source: Source
    score: float
    section: str | None = None


def _js_length(text: str) -> int:
    """Length in UTF-16 code units, like JavaScript's ``String.length``."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def tokenize(query: str) -> list[str]:
    """Search tokens of ``query``: the Markus tokenizer, plus CJK bigrams.

    ``tokenize("seed entropy BIP-39 entropy_check") == ["seed", "entropy", "bip-39",
    "entropy_check"]``.
    """
    tokens: list[str] = []
    seen: set[str] = set()

    def add(token: str) -> None:
        if token not in seen:
            seen.add(token)
            tokens.append(token)

    lowered = query.lower()
    separators = _SEPARATORS if lowered.isascii() else _separators_with_marks()
    for raw in separators.split(lowered):
        piece = raw.strip()
        if not piece:
            continue
        runs = CJK_RUN.findall(piece)
        if _js_length(piece) >= 2:
            add(piece)
        elif runs:
            add(piece)  # a lone CJK character is a word; the original dropped it
        for run in runs:
            for start in range(len(run) - 1):
                add(run[start : start + 2])
    for word in words(lowered):
        if "." in word or not word[0].isalnum():  # a dotted name or an emoji
            add(word)
    return tokens


@lru_cache(maxsize=1)
def _separators_with_marks() -> re.Pattern[str]:
    """:data:`_SEPARATORS` that keeps combining marks inside their word (marks that follow no
    letter or digit separate, as before)."""
    marks = combining_marks()
    return re.compile(rf"[^\w+\-{marks}]+[{marks}]*|^[{marks}]+")


def score_haystack(haystack: str, tokens: Sequence[str], full_query_lower: str) -> int:
    """How many tokens start a word of ``haystack``, doubled by a whole-query phrase hit."""
    if not tokens:
        return 0
    hay = haystack.lower()
    return _score_lowered(hay, tokens, full_query_lower.strip().lower())


_WORD_CHAR = r"[\w+\-]"
PREFIX_MIN_CHARS = 4
"""Tokens at least this long also match the start of a longer word."""


@lru_cache(maxsize=4096)
def _whole(text: str) -> re.Pattern[str] | None:
    """A pattern finding ``text`` at word starts; None when a substring test is the rule (CJK)."""
    if not text or CJK_RUN.search(text):
        return None
    start = f"(?<!{_WORD_CHAR})" if re.match(_WORD_CHAR, text[0]) else ""
    short = len(text) < PREFIX_MIN_CHARS and re.match(_WORD_CHAR, text[-1])
    end = f"(?!{_WORD_CHAR})" if short else ""
    return re.compile(start + re.escape(text) + end)


def occurs(text: str, hay: str) -> bool:
    """Whether lower-cased ``text`` starts a word of lower-cased ``hay`` (see the module notes)."""
    if text not in hay:
        return False
    pattern = _whole(text)
    return pattern is None or pattern.search(hay) is not None


def _score_lowered(hay: str, tokens: Sequence[str], full: str) -> int:
    score = 0
    for token in tokens:
        if occurs(token, hay):
            score += 1
    if len(full) >= 2 and occurs(full, hay):
        score += len(tokens)
    return score


class Haystacks:
    """Lower-cased haystacks prepared once and scored together, equal to :func:`score_haystack`.

    Lower-casing once per corpus version and counting token hits with one comprehension per
    token (instead of a function call per document) scores a full store in about half the time.
    """

    def __init__(self, haystacks: Sequence[str]) -> None:
        self.lowered = [hay.lower() for hay in haystacks]
        self._positions = range(len(self.lowered))

    def scores(self, tokens: Sequence[str], full_query_lower: str) -> dict[int, int]:
        """``{haystack index: score}`` for every haystack with a score above zero.

        ``tokens`` must come from tokenizing the query (so that a phrase hit implies token hits).
        """
        counts: Counter[int] = Counter()
        lowered = self.lowered
        for token in tokens:
            near = compress(self._positions, [token in hay for hay in lowered])
            counts.update(which for which in near if occurs(token, lowered[which]))
        full = full_query_lower.strip().lower()
        if len(full) >= 2 and tokens:
            bonus = len(tokens)
            for which in counts:
                if occurs(full, lowered[which]):
                    counts[which] += bonus
        return dict(counts)


def observation_haystack(observation: ObservationLike) -> str:
    """Searchable text of an observation: content, a newline, then its tags joined by spaces."""
    return observation.content + "\n" + " ".join(str(tag) for tag in observation.tags)


def section_haystack(section: SectionLike) -> str:
    """Searchable text of a curated section: ``## <name>`` then its stripped body."""
    return "## " + section.name.strip() + "\n" + section.body.strip()


def slugify(name: str) -> str:
    """The original's section slug: a-z, 0-9 and CJK kept, other runs become ``_``; ≤ 80 chars."""
    slug = _SLUG_RUN.sub("_", name.lower())
    if slug.startswith("_"):
        slug = slug[1:]
    if slug.endswith("_"):
        slug = slug[:-1]
    return slug[:80] or "section"


def curated_ids(sections: Iterable[SectionLike]) -> list[tuple[str, SectionLike]]:
    """``(curated_<slug>, section)`` pairs for every searchable section, with unique ids."""
    pairs: list[tuple[str, SectionLike]] = []
    used: dict[str, int] = {}
    for section in sections:
        if section.name.strip() == OBSERVATIONS_SECTION:
            continue
        base = CURATED_PREFIX + slugify(section.name.strip())
        count = used.get(base, 0) + 1
        used[base] = count
        pairs.append((base if count == 1 else f"{base}_{count}", section))
    return pairs


def preview(text: str, limit: int = DEFAULT_PREVIEW_CHARS) -> str:
    """``text`` cut to ``limit`` characters followed by ``"\\n…"`` when it is longer."""
    return text if len(text) <= limit else text[:limit] + PREVIEW_ELLIPSIS


def curated_hit(
    hit_id: str, section: SectionLike, score: float, preview_chars: int = DEFAULT_PREVIEW_CHARS
) -> KeywordHit:
    """The synthetic search entry for a curated section (type ``fact``, no timestamp)."""
    return KeywordHit(
        id=hit_id,
        type=CURATED_TYPE,
        content=preview(section_haystack(section), preview_chars),
        timestamp=None,
        tags=(),
        source=SOURCE_CURATED,
        score=score,
        section=section.name.strip(),
    )


def observation_hit(observation: ObservationLike, score: float) -> KeywordHit:
    """A search entry for an observation."""
    return KeywordHit(
        id=observation.id,
        type=observation.type,
        content=observation.content,
        timestamp=observation.timestamp,
        tags=tuple(observation.tags),
        source=SOURCE_OBSERVATION,
        score=score,
    )


def rank(hits: Iterable[KeywordHit]) -> list[KeywordHit]:
    """Score descending, ties by id (code-point order)."""
    return sorted(hits, key=lambda hit: (-hit.score, hit.id))


def keyword_search(
    query: str,
    observations: Iterable[ObservationLike],
    sections: Iterable[SectionLike] = (),
    *,
    curated_boost: float = DEFAULT_CURATED_BOOST,
    preview_chars: int = DEFAULT_PREVIEW_CHARS,
) -> list[KeywordHit]:
    """``MemoryStore.search``: OR-matched keyword hits over observations and curated sections.

    No limit is applied; a query without tokens returns ``[]``.
    """
    tokens = tokenize(query)
    if not tokens:
        return []
    full = query.strip().lower()
    hits: list[KeywordHit] = []
    for observation in observations:
        score = _score_lowered(observation_haystack(observation).lower(), tokens, full)
        if score > 0:
            hits.append(observation_hit(observation, score))
    for hit_id, section in curated_ids(sections):
        score = _score_lowered(section_haystack(section).lower(), tokens, full)
        if score > 0:
            hits.append(curated_hit(hit_id, section, score + curated_boost, preview_chars))
    return rank(hits)
