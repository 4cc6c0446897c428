from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markus_memory import analysis
from markus_memory.analysis import (
    MARK_RANGES,
    STOP_WORDS,
    analyse,
    combining_marks,
    joined_pairs,
    query_counts,
    query_terms,
    query_tokens,
    quote_fts,
    term_counts,
    term_key,
    term_text,
    tokens,
    words,
)


def test_query_terms_drop_stop_words_and_question_words() -> None:
    assert query_terms("When did Caroline go to the LGBTQ support group?") == [
        "caroline",
        "go",
        "lgbtq",
        "support",
        "group",
    ]


def test_possessive_and_punctuation_split() -> None:
    assert query_terms("What is Caroline's identity?") == ["caroline", "identity"]
    assert words("bip-39, entropy_check") == ["bip", "39", "entropy", "check"]


def test_digits_kept_and_duplicates_removed() -> None:
    assert query_terms("in 2023 and 2023 a 5 k") == ["2023", "5"]


def test_only_stop_words_are_about_nothing() -> None:
    assert query_terms("what was it?") == []
    assert query_terms("what was the lake?") == ["lake"]
    assert query_terms("?!") == []


@given(st.text(max_size=60))
def test_query_terms_are_distinct_lower_words(query: str) -> None:
    terms = query_terms(query)
    assert len(terms) == len(set(terms))
    assert all(term == term.lower() and term in words(query) for term in terms)
    if any(w not in STOP_WORDS and (len(w) > 1 or w.isdigit()) for w in words(query)):
        assert not any(term in STOP_WORDS for term in terms)


def test_quote_fts_escapes_quotes() -> None:
    assert quote_fts('say "hi" OR') == '"say ""hi"" OR"'


ASCII_TEXT = st.text(alphabet=st.sampled_from("abcXYZ019 _-'.,!\n\tcaresingrunning"), max_size=120)


@given(st.one_of(ASCII_TEXT, st.text(max_size=80)))
def test_term_counts_are_the_analysed_terms_by_key(text: str) -> None:
    # The memoised path the recall index writes with gives exactly the keys and frequencies
    # of analyse + term_key, for ASCII text (the fast path) and any other text alike.
    expected = {term_key(term): n for term, n in analyse(text).items()}
    assert term_counts(text) == expected
    assert term_counts(text) == expected  # again, now from the cache


@given(st.text(max_size=80))
def test_query_counts_count_each_query_term_by_key_in_first_seen_order(query: str) -> None:
    terms = query_tokens(query_terms(query))
    counts = query_counts(query_terms(query))
    assert list(counts) == list(dict.fromkeys(map(term_key, terms)))
    assert counts == {key: list(map(term_key, terms)).count(key) for key in counts}


def test_term_counts_cache_is_bounded_and_stays_right(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analysis, "WORD_CACHE_SIZE", 8)
    text = " ".join(f"word{i} Running runs" for i in range(40))
    expected = {term_key(term): n for term, n in analyse(text).items()}
    assert term_counts(text) == expected
    assert len(analysis._WORD_KEYS) <= 8


def test_joined_pairs_are_adjacent_content_words_written_as_one() -> None:
    assert joined_pairs("What did Nate think of the coconut milk ice cream?") == [
        "natethink",
        "coconutmilk",
        "milkice",
        "icecream",
    ]
    assert joined_pairs("his vegan ice-cream") == ["veganice", "icecream"]
    assert joined_pairs("won 3 video games in 2022") == ["videogames"]
    assert joined_pairs("the of and") == []


def test_cjk_runs_become_character_pairs() -> None:
    assert tokens("我们的数据很重要") == ["我们", "们的", "的数", "数据", "据很", "很重", "重要"]
    assert tokens("数 and 据") == ["数", "and", "据"]
    assert query_tokens(query_terms("数据库")) == ["数据", "据库"]
    assert tokens("Running naïve") == ["run", "naiv"]


def test_a_devanagari_word_keeps_its_combining_marks() -> None:
    # The vowel signs and the virama are marks, not letters: they used to split the word.
    assert words("कल हम दिल्ली जाएंगे") == ["कल", "हम", "दिल्ली", "जाएंगे"]
    assert query_terms("दिल्ली") == ["दिल्ली"]
    assert query_tokens(["दिल्ली"]) == tokens("दिल्ली") != tokens("दिल")


def test_each_emoji_is_a_term() -> None:
    # Skin tones, variation selectors and joiners are not terms of their own.
    assert words("deploy🚀 done 👍🏻 ❤️ 👩\u200d💻") == [
        "deploy",
        "🚀",
        "done",
        "👍",
        "❤",
        "👩",
        "💻",
    ]
    assert query_terms("🚀") == ["🚀"] and tokens("marker 🚀") == ["marker", "🚀"]


def test_a_dotted_name_is_a_term_beside_its_words() -> None:
    assert words("use a.b.c, then v1.2.") == [
        "use",
        "a.b.c",
        "a",
        "b",
        "c",
        "then",
        "v1.2",
        "v1",
        "2",
    ]
    assert tokens("file.py is running") == ["file.py", "file", "py", "i", "run"]
    assert query_terms("a.b.c") == ["a.b.c"] and query_tokens(["a.b.c"]) == ["a.b.c"]
    # An ellipsis or a sentence end joins nothing.
    assert words("wait...what. Next") == ["wait", "what", "next"]


def test_term_text_is_the_terms_joined_by_spaces() -> None:
    assert term_text("She drinks 数据 🚀 a.b") == "she drink 数据 🚀 a.b a b"


def test_every_combining_mark_lies_in_the_ranges_scanned() -> None:
    scanned = re.compile(f"[{combining_marks()}]")
    for cp in range(0x110000):
        if unicodedata.category(chr(cp))[0] == "M":
            assert scanned.match(chr(cp)), hex(cp)
            assert any(lo <= cp < hi for lo, hi in MARK_RANGES), hex(cp)
