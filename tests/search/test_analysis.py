from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markus_memory import analysis
from markus_memory.analysis import (
    STOP_WORDS,
    analyse,
    joined_pairs,
    query_counts,
    query_terms,
    query_tokens,
    quote_fts,
    term_counts,
    term_key,
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
