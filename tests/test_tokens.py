"""Token estimation: the original heuristic (the original's cases) and the exact counter."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory.tokens import (
    ExactEstimator,
    HeuristicEstimator,
    cjk_ratio,
    default_estimator,
    largest_prefix_within,
)

SENTENCE = "The quick brown fox jumps over."  # 31 chars


def test_english_estimate_is_in_the_original_range() -> None:
    assert len(SENTENCE) == 31
    assert 5 < HeuristicEstimator().count(SENTENCE) < 20


def test_cjk_gets_fewer_chars_per_token() -> None:
    est = HeuristicEstimator()
    cjk = "今天天气很好我们去公园散步吧"
    assert cjk_ratio(cjk) == 1.0
    assert est.count(cjk) / len(cjk) > est.count("a" * len(cjk)) / len(cjk)
    assert est.count(cjk) == -(-len(cjk) // 1.5)


def test_empty_is_zero() -> None:
    assert HeuristicEstimator().count("") == 0


def test_calibration_is_clamped() -> None:
    assert HeuristicEstimator(5.0).calibration == 2.0
    assert HeuristicEstimator(0.1).calibration == 0.5
    assert HeuristicEstimator(2.0).count("abcd" * 10) == 20


def test_exact_counter_matches_tiktoken_counts() -> None:
    pytest.importorskip("toktok")
    exact = ExactEstimator("o200k_base")
    assert exact.count("hello world") == 2
    assert exact.count("") == 0
    assert isinstance(default_estimator(), ExactEstimator)


def test_unknown_encoding_fails_at_construction() -> None:
    pytest.importorskip("toktok")
    with pytest.raises(KeyError):
        ExactEstimator("no_such_encoding")


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(alphabet=st.sampled_from("ab 漢字。\n"), max_size=200),
    max_tokens=st.integers(0, 60),
    max_chars=st.integers(0, 250),
)
def test_largest_prefix_fits_both_caps(text: str, max_tokens: int, max_chars: int) -> None:
    est = HeuristicEstimator()
    prefix = largest_prefix_within(text, max_tokens, max_chars, est)
    assert text.startswith(prefix)
    assert len(prefix) <= max_chars
    assert est.count(prefix) <= max_tokens
    if len(text) <= max_chars and est.count(text) <= max_tokens:
        assert prefix == text


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=100))
def test_cjk_ratio_matches_the_original_ranges(text: str) -> None:
    ranges = [
        (0x4E00, 0x9FFF),
        (0x3400, 0x4DBF),
        (0x3000, 0x303F),
        (0xFF00, 0xFFEF),
        (0x2E80, 0x2EFF),
        (0x3100, 0x312F),
        (0x31A0, 0x31BF),
        (0xFE30, 0xFE4F),
    ]
    expected = sum(any(lo <= ord(c) <= hi for lo, hi in ranges) for c in text)
    assert cjk_ratio(text) == (expected / len(text) if text else 0.0)
    assert cjk_ratio("ぁ한") == 0.0  # no kana, no hangul
