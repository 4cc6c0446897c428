"""The knowledge block algorithm of the original and its caps measured in tokens."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory.config import Limits
from markus_memory.prompt import knowledge_char_cap, prepare_knowledge
from markus_memory.tokens import ExactEstimator, HeuristicEstimator, TokenEstimator

HEURISTIC = HeuristicEstimator()


def _estimators() -> list[TokenEstimator]:
    found: list[TokenEstimator] = [HEURISTIC]
    try:
        found.append(ExactEstimator())
    except ImportError:
        pass
    return found


def test_A_knowledge_heading_demote() -> None:
    raw = "# Top\nintro\n## Useful Facts\n- water is wet\n### Deep\nkept as is"
    out = prepare_knowledge(raw, 1500, 6000, HEURISTIC)
    lines = out.text.splitlines()
    assert "### Useful Facts" in lines and "### Top" in lines and "### Deep" in lines
    assert not any(line.startswith(("## ", "# ")) for line in lines)
    assert not out.truncated


def test_A_knowledge_heading_demote_stale_goes_last_under_a_small_cap() -> None:
    raw = (
        "## compact_1700000000 summary\n" + "old stuff " * 20 + "\n"
        "## Useful Facts\nthe deploy key lives in vault\n"
    )
    out = prepare_knowledge(raw, 1500, 80, HEURISTIC)
    assert out.text.startswith("### Useful Facts")
    assert "the deploy key lives in vault" in out.text
    assert out.truncated
    assert len(out.text) <= 80


def test_subsections_stay_with_their_parent() -> None:
    raw = "## timeout diagnosis\nnotes\n### Step 1\nstale detail\n## Good\nfresh\n"
    out = prepare_knowledge(raw, 1500, 6000, HEURISTIC)
    assert out.text.index("### Good") < out.text.index("### timeout diagnosis")
    assert out.text.index("### timeout diagnosis") < out.text.index("### Step 1")


def test_whole_raw_fits_untouched_apart_from_demotion() -> None:
    raw = "## A\none\n\n## B\ntwo"
    out = prepare_knowledge(raw, 1500, 6000, HEURISTIC)
    assert out.text == "### A\none\n\n### B\ntwo"
    assert not out.truncated


def test_char_caps_per_profile() -> None:
    limits = Limits()
    assert knowledge_char_cap(limits, limits.knowledge_tokens_for("execute")) == 6000
    assert knowledge_char_cap(limits, limits.knowledge_tokens_for("govern")) == 6000
    assert knowledge_char_cap(limits, limits.knowledge_tokens_for("default")) == 6000
    assert knowledge_char_cap(limits, limits.knowledge_tokens_for("converse")) == 4800
    assert limits.knowledge_tokens_for("reflex") == 0


ASCII = "## Ops\n" + "Deploys run through the staging pipeline first. " * 300
CJK = "## 运维\n" + "部署先经过预发布环境的流水线，然后再上线。" * 400
MIXED = "## Mixed 混合\n" + "Deploy 部署 via staging 预发布 then prod 上线. " * 300


@pytest.mark.parametrize("raw", [ASCII, CJK, MIXED], ids=["ascii", "cjk", "mixed"])
@pytest.mark.parametrize("max_tokens", [1500, 1200])
def test_A_knowledge_cap_holds_in_tokens_for_every_script(raw: str, max_tokens: int) -> None:
    for est in _estimators():
        char_cap = min(8000, max_tokens * 4)
        out = prepare_knowledge(raw, max_tokens, char_cap, est)
        assert est.count(out.text) <= max_tokens, est.name
        assert len(out.text) <= char_cap
        assert out.truncated
        used = max(est.count(out.text) / max_tokens, len(out.text) / char_cap)
        assert used > 0.9, "the cut should use most of the room of the cap that binds"


def test_cjk_knowledge_no_longer_overshoots() -> None:
    """The original's 4 chars/token let CJK text reach ~2.7x its token cap."""
    out = prepare_knowledge(CJK, 1500, 6000, HEURISTIC)
    assert len(out.text) < 6000 / 2
    assert HEURISTIC.count(out.text) <= 1500


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(
    raw=st.lists(st.sampled_from(["#", "## ", "# ", "\n", "a", "漢", " ", "compact_1"])).map(
        "".join
    ),
    max_tokens=st.integers(0, 80),
    max_chars=st.integers(0, 300),
)
def test_caps_always_hold(raw: str, max_tokens: int, max_chars: int) -> None:
    out = prepare_knowledge(raw, max_tokens, max_chars, HEURISTIC)
    assert len(out.text) <= max_chars
    assert HEURISTIC.count(out.text) <= max_tokens
    assert not any(line.startswith(("# ", "## ")) for line in out.text.splitlines())


def test_a_cut_part_ends_on_a_whole_line_when_that_keeps_most_of_it() -> None:
    raw = "## A\n" + "".join(f"line {i:03d} of the procedure\n" for i in range(100))
    out = prepare_knowledge(raw, 1500, 400, HEURISTIC)
    assert out.truncated and out.text.splitlines()[-1].endswith("of the procedure")
    assert len(out.text) > 300
