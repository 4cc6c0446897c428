"""Hygiene after a dream, with the original's bugs fixed (heading dedupe, <think> strip)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from markus_memory.config import Limits
from markus_memory.dream.hygiene import clean_curated, cut_at_line, rendered_curated_chars

LIMITS = Limits()


def kinds(actions) -> list[str]:
    return [a.kind for a in actions]


def test_daily_report_sections_are_dropped() -> None:
    _, sections, actions = clean_curated(
        "# Knowledge",
        [("procedures", "a"), ("daily-report-2026-11-01", "report"), ("x", "b")],
        LIMITS,
    )
    assert sections == [("procedures", "a"), ("x", "b")]
    assert kinds(actions) == ["daily-report"]


def test_think_blocks_are_stripped_for_real() -> None:
    body = "keep\n<think>\nprivate\n</think>\nalso keep"
    preamble, sections, actions = clean_curated("# K <think>x</think>", [("s", body)], LIMITS)
    assert sections == [("s", "keep\nalso keep")]
    assert preamble == "# K "
    assert kinds(actions) == ["think", "think"]


def test_regression_14_1_8_subheadings_in_different_sections_are_not_deduplicated() -> None:
    sections = [("deploy", "### Step 1\nbuild"), ("release", "### Step 1\ntag")]
    _, kept, actions = clean_curated("", sections, LIMITS)
    assert kept == sections and actions == []


def test_only_identical_repeated_sections_are_dropped() -> None:
    sections = [("a", "same"), ("b", "x"), ("A", "same "), ("a", "different")]
    _, kept, actions = clean_curated("", sections, LIMITS)
    assert kept == [("a", "same"), ("b", "x"), ("a", "different")]
    assert kinds(actions) == ["duplicate-section"]


def test_section_cap_cuts_at_a_line_end() -> None:
    limits = replace(LIMITS, section_max_chars=10)
    _, kept, actions = clean_curated("", [("s", "line one\nline two\n")], limits)
    assert kept == [("s", "line one")]
    assert kinds(actions) == ["section-cap"]


def test_total_cap_shortens_from_the_last_section() -> None:
    limits = replace(LIMITS, curated_max_chars=60)
    sections = [("a", "first body line\nmore"), ("b", "second body\nline two\nline three")]
    preamble, kept, actions = clean_curated("# K", sections, limits)
    assert rendered_curated_chars(preamble, kept) <= 60
    assert kept[0] == sections[0]
    assert kinds(actions) == ["total-cap"]


def test_cut_at_line() -> None:
    assert cut_at_line("abc", 5) == "abc"
    assert cut_at_line("abcdef", 3) == "abc"
    assert cut_at_line("ab\ncd\nef", 6) == "ab\ncd"


names = st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=12)


@given(st.lists(st.tuples(names, st.text(max_size=200)), max_size=8))
def test_hygiene_is_idempotent_and_within_caps(sections: list[tuple[str, str]]) -> None:
    limits = replace(LIMITS, section_max_chars=80, curated_max_chars=300)
    preamble, kept, _ = clean_curated("# K", sections, limits)
    assert all(len(body.strip()) <= 80 for _, body in kept)
    assert rendered_curated_chars(preamble, kept) <= 300 or not kept
    again = clean_curated(preamble, kept, limits)
    assert again[:2] == (preamble, kept)
