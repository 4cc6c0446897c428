"""The one text analyser: words, stop words, stems, CJK bigrams, term keys and FTS quoting.

Every full-text index of the store is fed by :func:`analyse` and every query goes through
:func:`query_tokens`, on SQLite and PostgreSQL alike, so a query finds the same words in every
layer and on both backends. Documents are split into Unicode letter/digit words (diacritics
removed, lower-cased, Porter-stemmed); a run of CJK characters, which has no spaces between
words, becomes its overlapping character pairs ("数据库" -> "数据", "据库"), so a two-character
query word matches inside a longer run.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import unicodedata
from collections import Counter, _count_elements  # type: ignore[attr-defined]  # C counter
from collections.abc import Collection

import Stemmer

# Unicode letters and digits; apostrophes and all punctuation split words ("caroline's" ->
# "caroline", "s"; the one-letter remainder is dropped from queries below).
_WORD = re.compile(r"[^\W_]+")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_PIECE = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")

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
    """Lower-cased words of ``text`` in order (letters and digits; everything else splits)."""
    return _WORD.findall(text.lower())


def _fold(word: str) -> str:
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """The index terms of ``text`` in order: stemmed words and CJK character pairs."""
    if text.isascii():
        return list(_stemmer().stemWords(_WORD.findall(text.lower())))
    out: list[str] = []
    plain: list[str] = []
    for piece in _PIECE.findall(text.lower()):
        if _CJK_RUN.fullmatch(piece):
            if len(piece) == 1:
                out.append(piece)
            else:
                out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
        else:
            folded = _fold(piece)
            plain.append(folded)
            out.append(folded)
    if plain:
        stems = iter(_stemmer().stemWords(plain))
        out = [next(stems) if not _CJK_RUN.fullmatch(t) else t for t in out]
    return out


def cjk_pairs(text: str) -> str:
    """The character pairs of every CJK run of ``text``, space-separated (a lone character
    stays itself); "" when it has none. Full-text indexes whose tokenizer keeps a CJK run as
    one token index ``text`` plus these, so a two-character word is found inside a run."""
    out: list[str] = []
    for run in _CJK_RUN.findall(text):
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return " ".join(out)


def with_cjk_pairs(text: str) -> str:
    """``text`` followed by its :func:`cjk_pairs` (unchanged without CJK)."""
    pairs = cjk_pairs(text)
    return f"{text}\n{pairs}" if pairs else text


def cjk_phrase(term: str) -> str:
    """A query term as the phrase such an index holds: a CJK run becomes its pairs in order
    (matched as adjacent tokens); other terms are unchanged."""
    if not _CJK_RUN.search(term):
        return term
    return " ".join(
        cjk_pairs(piece) if _CJK_RUN.fullmatch(piece) else piece for piece in _PIECE.findall(term)
    )


def analyse(text: str) -> Counter[str]:
    """Term frequencies of a document (its length is their sum)."""
    return Counter(tokens(text))


WORD_CACHE_SIZE = 1 << 17
"""Words whose term key :func:`term_counts` remembers (emptied when full)."""
# An ASCII word is the run of letters and digits between other characters, lower-cased: one
# translation of the text and a split give the same words as ``_WORD`` on its lower case.
_ASCII_WORDS = str.maketrans(
    {chr(i): chr(i).lower() if chr(i).isalnum() else " " for i in range(128)}
)


class _WordKeys(dict[str, int]):
    """Lower-cased ASCII word -> the term key of its stem, filled on first use."""

    def __missing__(self, word: str) -> int:
        if len(self) >= WORD_CACHE_SIZE:
            self.clear()
        key = self[word] = term_key(_stemmer().stemWord(word))
        return key


_WORD_KEYS = _WordKeys()


def term_counts(text: str) -> dict[int, int]:
    """Term frequencies of a document keyed by :func:`term_key` (what the store's term tables
    hold): the same as ``analyse`` then ``term_key``, with each ASCII word stemmed and hashed
    once per process rather than once per occurrence."""
    counts: dict[int, int] = {}
    if text.isascii():
        _count_elements(counts, map(_WORD_KEYS.__getitem__, text.translate(_ASCII_WORDS).split()))
    else:
        _count_elements(counts, map(term_key, tokens(text)))
    return counts


def query_terms(query: str) -> list[str]:
    """The distinct content words of a query, in first-seen order.

    Stop words and one-character words are dropped, digits and CJK characters are kept. A
    query made only of stop words has none: it matches nothing ("what is it?" is not about
    anything a memory holds).
    """
    seen: dict[str, None] = {}
    for word in words(query):
        if word in STOP_WORDS or (
            len(word) < 2 and not word.isdigit() and not _CJK_RUN.match(word)
        ):
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
    """The index terms of query words, one entry per occurrence: two words with one stem
    count that stem twice, as two phrases of a full-text query would."""
    out: list[str] = []
    for word in words_of_query:
        out.extend(tokens(word))
    return out


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
