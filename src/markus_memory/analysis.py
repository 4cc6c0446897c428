"""The one text analyser: words, stop words, stems, CJK bigrams, term keys and FTS quoting.

Every full-text index of the store is fed by :func:`tokens` (or its keyed :func:`term_counts`)
and every query goes through :func:`query_terms` and :func:`query_tokens`, on SQLite and
PostgreSQL alike, so a query finds the same words in every layer and on both backends.
Documents are split into Unicode words: runs of letters and digits with their combining marks
(so a Devanagari word keeps its vowel signs and viramas), diacritics removed, lower-cased,
Porter-stemmed. A run of CJK characters, which has no spaces between words, becomes its
overlapping character pairs ("数据库" -> "数据", "据库"), so a two-character query word matches
inside a longer run. Each emoji is a term of its own, and a dotted name ("a.b.c",
"file.py", "3.5") is a term as written besides the words it is made of.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import unicodedata
from collections import Counter, _count_elements  # type: ignore[attr-defined]  # C counter
from collections.abc import Collection, Iterable
from itertools import chain

import Stemmer

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(rf"[{_CJK}]+")
# The CJK runs and the other runs of one word.
_PIECE = re.compile(rf"[{_CJK}]+|[^{_CJK}]+")
# ASCII words and dotted names, in lower-cased ASCII text.
_ASCII_TOKEN = re.compile(r"[a-z0-9]+(?:\.[a-z0-9]+)*")

# Every combining mark of Unicode lies in these ranges (tests check it for the running Python).
MARK_RANGES = ((0x300, 0x1E950), (0xE0100, 0xE01F0))
# The blocks whose symbols (category So) are emoji and pictographs; skin-tone modifiers (Sk),
# variation selectors (Mn) and joiners (Cf) are not terms.
EMOJI_RANGES = ((0x2300, 0x2400), (0x2600, 0x27C0), (0x2B00, 0x2C00), (0x1F000, 0x1FB00))


def _char_class(code_points: Iterable[int]) -> str:
    """A regex character class body listing ``code_points`` (ascending) as ranges."""
    spans: list[list[int]] = []
    for cp in code_points:
        if spans and spans[-1][1] == cp - 1:
            spans[-1][1] = cp
        else:
            spans.append([cp, cp])
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in spans
    )


@functools.cache
def combining_marks() -> str:
    """A regex character class body of every combining mark (Unicode categories Mn, Mc, Me);
    built on first use (scanning Unicode takes tens of milliseconds)."""
    category = unicodedata.category
    return _char_class(
        cp
        for cp in chain.from_iterable(range(lo, hi) for lo, hi in MARK_RANGES)
        if category(chr(cp))[0] == "M"
    )


@functools.cache
def _unicode_token() -> re.Pattern[str]:
    """Words (letters and digits with their combining marks), dotted names and single emoji
    of lower-cased text."""
    emoji = _char_class(
        cp
        for cp in chain.from_iterable(range(lo, hi) for lo, hi in EMOJI_RANGES)
        if unicodedata.category(chr(cp)) == "So"
    )
    word = rf"[^\W_]+(?:[{combining_marks()}]+[^\W_]*)*"
    return re.compile(rf"{word}(?:\.{word})*|[{emoji}]")


# English function words plus the question words that carry no topic. Removing them from the
# query is the single largest gain over plain bm25 on conversational questions (measured on
# LoCoMo dev: recall_any@10 0.58 -> 0.67); documents keep them (bm25 idf weights them anyway).
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers herself
    him himself his how i if in into is isn it its itself just let ll me more most much my myself
    no nor not now of off on once only or other ought our ours ourselves out over own re same shan
    she should shouldn so some such than that the their theirs them themselves then there these
    they this those through to too under until up upon us very was wasn we were weren what when
    where which while who whom whose why will with won would wouldn ve you your yours yourself
    yourselves also ever get got like one really s t d m o y
    kind kinds type types sort thing things way ways
    """.split()
)

_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if stemmer is None:  # Stemmer objects are not thread-safe: one per thread
        stemmer = Stemmer.Stemmer("porter")
        _local.stemmer = stemmer
    return stemmer


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` in order: runs of letters and digits (with their combining
    marks), each emoji, and each dotted name ("a.b.c") followed by its words; everything else
    splits."""
    lowered = text.lower()
    found = (_ASCII_TOKEN if lowered.isascii() else _unicode_token()).findall(lowered)
    return _with_parts(found) if "." in lowered else found


def _with_parts(found: list[str]) -> list[str]:
    """Words with each dotted name followed by its words."""
    out: list[str] = []
    for word in found:
        out.append(word)
        if "." in word:
            out.extend(word.split("."))
    return out


def _fold(word: str) -> str:
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _terms(found: Iterable[str], cjk: bool = True) -> list[str]:
    """The index terms of words in order: a dotted name as written (diacritics removed), a CJK
    run as its character pairs, an emoji as it is, any other word folded and stemmed
    (``cjk=False``: the words hold no CJK character)."""
    out: list[str] = []
    plain: list[int] = []  # positions in ``out`` of the words to stem
    for word in found:
        if "." in word:
            out.append(_fold(word))
            continue
        for piece in _PIECE.findall(word) if cjk and not word.isascii() else (word,):
            if cjk and _CJK_RUN.fullmatch(piece):
                if len(piece) == 1:
                    out.append(piece)
                else:
                    out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            else:
                plain.append(len(out))
                out.append(_fold(piece))
    if plain:
        stems = _stemmer().stemWords([out[i] for i in plain])
        for i, stem in zip(plain, stems, strict=True):
            out[i] = stem
    return out


def _has_dotted_name(text: str) -> bool:
    """Whether ASCII ``text`` has a dot between two letters or digits (most dots end a
    sentence: looking at each is quicker than a regular expression over the whole text)."""
    at = text.find(".")
    while 0 <= at:
        if 0 < at < len(text) - 1 and text[at - 1].isalnum() and text[at + 1].isalnum():
            return True
        at = text.find(".", at + 1)
    return False


def tokens(text: str) -> list[str]:
    """The index terms of ``text`` in order: stemmed words, CJK character pairs, emoji and
    dotted names (see the module notes)."""
    lowered = text.lower()
    if lowered.isascii():
        found = _ASCII_TOKEN.findall(lowered)
        if not _has_dotted_name(lowered):
            return list(_stemmer().stemWords(found))
        return _terms(_with_parts(found), cjk=False)
    return _terms(words(text), cjk=_CJK_RUN.search(lowered) is not None)


def term_text(text: str) -> str:
    """The index terms of ``text`` joined by spaces: what an engine's own full-text index holds
    (activities: FTS5 on SQLite, ``tsvector`` on PostgreSQL), so that it finds this analyser's
    terms and nothing else."""
    return " ".join(tokens(text))


def analyse(text: str) -> Counter[str]:
    """Term frequencies of a document (its length is their sum)."""
    return Counter(tokens(text))


WORD_CACHE_SIZE = 1 << 17
"""Words whose term key :func:`term_counts` remembers (emptied when full)."""
# An ASCII word is the run of letters and digits between other characters, lower-cased: one
# translation of the text and a split give the same words as ``_ASCII_TOKEN`` on its lower
# case. Text with a dotted name keeps its dots, and the pieces holding one (a dotted name, or
# a word at a sentence end) are analysed apart.
_ASCII_WORDS = str.maketrans(
    {chr(i): chr(i).lower() if chr(i).isalnum() else " " for i in range(128)}
)
_ASCII_WORDS_AND_DOTS = str.maketrans(
    {chr(i): chr(i).lower() if chr(i).isalnum() or chr(i) == "." else " " for i in range(128)}
)


class _WordKeys(dict[str, int]):
    """Lower-cased ASCII word -> the term key of its stem, filled on first use."""

    def __missing__(self, word: str) -> int:
        if len(self) >= WORD_CACHE_SIZE:
            self.clear()
        key = self[word] = term_key(_stemmer().stemWord(word))
        return key


class _PieceKeys(dict[str, tuple[int, ...]]):
    """Lower-cased ASCII piece with dots ("end.", "a.b.c") -> the term keys of its terms."""

    def __missing__(self, piece: str) -> tuple[int, ...]:
        if len(self) >= WORD_CACHE_SIZE:
            self.clear()
        keys = self[piece] = tuple(map(term_key, tokens(piece)))
        return keys


_WORD_KEYS = _WordKeys()
_PIECE_KEYS = _PieceKeys()


def term_counts(text: str) -> dict[int, int]:
    """Term frequencies of a document keyed by :func:`term_key` (what the store's term tables
    hold): the same as ``analyse`` then ``term_key``, with each ASCII word stemmed and hashed
    once per process rather than once per occurrence."""
    counts: dict[int, int] = {}
    if not text.isascii():
        _count_elements(counts, map(term_key, tokens(text)))
    elif not _has_dotted_name(text):
        _count_elements(counts, map(_WORD_KEYS.__getitem__, text.translate(_ASCII_WORDS).split()))
    else:
        pieces = text.translate(_ASCII_WORDS_AND_DOTS).split()
        _count_elements(counts, map(_WORD_KEYS.__getitem__, [p for p in pieces if "." not in p]))
        for piece in [p for p in pieces if "." in p]:
            _count_elements(counts, _PIECE_KEYS[piece])
    return counts


def query_terms(query: str) -> list[str]:
    """The distinct content words of a query, in first-seen order.

    Stop words and one-character words are dropped; digits, CJK characters and emoji are kept.
    A dotted name is a query word of its own ("a.b.c", matched as written), and so are its
    words. A query made only of stop words has none: it matches nothing ("what is it?" is not
    about anything a memory holds).
    """
    seen: dict[str, None] = {}
    for word in words(query):
        if word in STOP_WORDS or (len(word) < 2 and word.isalpha() and not _CJK_RUN.match(word)):
            continue
        seen.setdefault(word, None)
    return list(seen)


def joined_pairs(query: str, among: Collection[str] | None = None) -> list[str]:
    """Each two adjacent content words of a query written as one ("ice cream", "ice-cream" ->
    "icecream"), for the compounds English writes both ways; only pairs of words in ``among``
    when given. Queries look these up beside their words (a pair no document holds matches
    nothing); documents are indexed as written, so nothing is reindexed for them."""
    found = words(query)
    out: dict[str, None] = {}
    for first, second in zip(found, found[1:], strict=False):
        if all(
            word.isalpha() and len(word) > 1 and word not in STOP_WORDS for word in (first, second)
        ) and (among is None or (first in among and second in among)):
            out.setdefault(first + second, None)
    return list(out)


def query_tokens(words_of_query: list[str]) -> list[str]:
    """The index terms of query words (from :func:`query_terms`), one entry per occurrence:
    two words with one stem count that stem twice, as two phrases of a full-text query would.
    A dotted name stays one term (its words are query words of their own)."""
    return _terms(words_of_query)


def query_counts(words_of_query: list[str]) -> dict[int, int]:
    """How often each index term of query words occurs, keyed by :func:`term_key` in
    first-seen order: what a BM25 query weights (by idf times the count)."""
    counts: dict[int, int] = {}
    _count_elements(counts, map(term_key, query_tokens(words_of_query)))
    return counts


@functools.lru_cache(maxsize=1 << 17)
def term_key(term: str) -> int:
    """A term's 63-bit key in the store's term tables (signed, fits BIGINT and INTEGER)."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def quote_fts(term: str) -> str:
    """One FTS5 string literal: ``NOT``, ``OR``, quotes and column names cannot break a MATCH.
    NUL and lone surrogates are dropped (no driver can send them)."""
    clean = term.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    return '"' + clean.replace('"', '""') + '"'
