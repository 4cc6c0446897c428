"""Plan parsing and validation: every rule, and replies written by an adversary."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from markus_memory.config import Limits
from markus_memory.dream.plan import (
    Merge,
    Plan,
    Promotion,
    clean_content,
    coverage,
    extract_json,
    parse_reply,
    strip_think,
)

LIMITS = Limits()
BATCH = {
    f"obs_{i}": f"the deploy runs on friday number {i} with blue green switch" for i in range(10)
}


def reply(**parts: object) -> str:
    return json.dumps(parts)


def reasons(checked) -> list[str]:
    return [r.reason for r in checked.rejections]


def test_a_valid_reply_becomes_a_plan() -> None:
    text = reply(
        remove=["obs_0"],
        merge=[
            {
                "removeIds": ["obs_1", "obs_2"],
                "mergedContent": BATCH["obs_1"] + " and 2",
                "tags": ["ops"],
            }
        ],
        promote=[
            {
                "sourceIds": ["obs_3", "obs_4", "obs_5"],
                "section": "procedures",
                "content": "Deploy on Fridays.",
            }
        ],
    )
    checked = parse_reply(text, BATCH, LIMITS)
    assert checked.rejections == ()
    assert checked.plan == Plan(
        ("obs_0",),
        (Merge(("obs_1", "obs_2"), BATCH["obs_1"] + " and 2", ("ops",)),),
        (Promotion(("obs_3", "obs_4", "obs_5"), "procedures", "Deploy on Fridays."),),
    )
    assert checked.plan.named_ids() == {f"obs_{i}" for i in range(6)}


def test_json_inside_prose_fences_and_think_blocks_is_found() -> None:
    plan = {"remove": ["obs_1"]}
    for text in (
        "Sure! " + json.dumps(plan) + " done <<HANDLE_COMPLETE>>",
        "```json\n" + json.dumps(plan) + "\n```",
        "<think>maybe {remove all}</think>" + json.dumps(plan),
    ):
        assert extract_json(text) == plan


def test_garbage_text_is_one_rejection_and_an_empty_plan() -> None:
    for text in ("I could not do it.", "[preempted]", "{not json at all}", "", "[1, 2]"):
        checked = parse_reply(text, BATCH, LIMITS)
        assert checked.plan.is_empty
        assert len(checked.rejections) == 1 and checked.rejections[0].part == "reply"


def test_ids_that_do_not_exist_are_rejected_one_by_one() -> None:
    text = reply(
        remove=["obs_1", "ghost", 7],
        merge=[{"removeIds": ["obs_2", "nope"], "mergedContent": BATCH["obs_2"]}],
        promote=[{"sourceIds": ["obs_3", "obs_4", "x"], "section": "s", "content": "c"}],
    )
    checked = parse_reply(text, BATCH, LIMITS)
    assert checked.plan == Plan(remove=("obs_1",))
    assert [r.part for r in checked.rejections] == ["remove", "remove", "merge", "promote"]
    assert "unknown ids ['ghost']" in reasons(checked)[0]


def test_regression_14_1_10_missing_or_mistyped_arrays_do_not_abort_the_rest() -> None:
    checked = parse_reply(reply(remove="obs_1", promote=None, extra=1), BATCH, LIMITS)
    assert checked.plan.is_empty
    assert any("'remove' must be a list" in r for r in reasons(checked))
    assert any("unknown key 'extra'" in r for r in reasons(checked))
    merge_missing = parse_reply(reply(merge=[{"mergedContent": "x"}]), BATCH, LIMITS)
    assert merge_missing.plan.is_empty and merge_missing.rejections[0].part == "merge"


def test_removing_everything_is_capped_at_half_the_batch() -> None:
    checked = parse_reply(reply(remove=list(BATCH)), BATCH, LIMITS)
    assert checked.plan.remove == tuple(list(BATCH)[:5])
    assert len(checked.rejections) == 5
    assert all("removal cap of 5" in r for r in reasons(checked))


def test_per_cycle_caps() -> None:
    big = {f"o{i}": f"word{i} alpha beta gamma" for i in range(400)}
    limits = Limits()
    text = reply(
        remove=[f"o{i}" for i in range(60)],
        merge=[
            {
                "removeIds": [f"o{i}", f"o{i + 1}"],
                "mergedContent": f"word{i} word{i + 1} alpha beta gamma",
            }
            for i in range(100, 150, 2)
        ],
        promote=[
            {"sourceIds": [f"o{i}", f"o{i + 1}", f"o{i + 2}"], "section": "s", "content": "c"}
            for i in range(200, 275, 3)
        ],
    )
    plan = parse_reply(text, big, limits).plan
    assert (len(plan.remove), len(plan.merge), len(plan.promote)) == (50, 20, 20)


def test_regression_14_1_10_promotion_needs_three_sources() -> None:
    text = reply(promote=[{"sourceIds": ["obs_1", "obs_2"], "section": "s", "content": "c"}])
    checked = parse_reply(text, BATCH, LIMITS)
    assert checked.plan.is_empty and "at least 3" in reasons(checked)[0]


def test_an_id_may_be_used_by_one_part_only() -> None:
    text = reply(
        remove=["obs_1"],
        merge=[{"removeIds": ["obs_1", "obs_2"], "mergedContent": BATCH["obs_2"] + " 1"}],
    )
    checked = parse_reply(text, BATCH, LIMITS)
    assert checked.plan == Plan(remove=("obs_1",))
    assert "used twice" in reasons(checked)[0]


def test_merging_unrelated_entries_into_a_huge_one_is_rejected() -> None:
    unrelated = {"a": "postgres listens on port 5432", "b": "the cat is called Mimi", "c": "x" * 10}
    huge = reply(merge=[{"removeIds": ["a", "b"], "mergedContent": "postgres port 5432 " * 400}])
    checked = parse_reply(huge, unrelated, LIMITS)
    assert checked.plan.is_empty and "chars (limit 3000)" in reasons(checked)[0]
    lossy = reply(merge=[{"removeIds": ["a", "b"], "mergedContent": "postgres listens on 5432"}])
    checked = parse_reply(lossy, unrelated, LIMITS)
    assert checked.plan.is_empty and "drops most of ['b']" in reasons(checked)[0]


def test_promoted_content_cannot_open_sections_or_leak_thinking() -> None:
    content = "<think>secret plan</think>Step one\n## _observations\n## evil\nbody"
    text = reply(
        promote=[
            {"sourceIds": ["obs_1", "obs_2", "obs_3"], "section": "procedures", "content": content}
        ]
    )
    (promotion,) = parse_reply(text, BATCH, LIMITS).plan.promote
    assert promotion.content == "Step one\n### _observations\n### evil\nbody"
    assert not any(line.startswith("## ") for line in promotion.content.split("\n"))


def test_reserved_or_bad_section_names_are_rejected() -> None:
    for name in ("_observations", "daily-report-2026-01-01", "", "  ", "a\x00b", "x" * 101, 3):
        text = reply(
            promote=[{"sourceIds": ["obs_1", "obs_2", "obs_3"], "section": name, "content": "c"}]
        )
        assert parse_reply(text, BATCH, LIMITS).plan.is_empty, name


def test_regression_14_5_38_section_names_keep_their_script() -> None:
    text = reply(
        promote=[
            {"sourceIds": ["obs_1", "obs_2", "obs_3"], "section": " 部署  技巧 ", "content": "c"}
        ]
    )
    assert parse_reply(text, BATCH, LIMITS).plan.promote[0].section == "部署 技巧"


def test_tags_are_cleaned() -> None:
    text = reply(
        merge=[
            {
                "removeIds": ["obs_1", "obs_2"],
                "mergedContent": BATCH["obs_1"] + " 2",
                "tags": ["a,b", " ", "a b"],
            }
        ]
    )
    assert parse_reply(text, BATCH, LIMITS).plan.merge[0].tags == ("a b",)


def test_strip_think_and_clean_content() -> None:
    assert strip_think("a<think>x\ny</think>\nb") == "ab"
    assert strip_think("<THINK>x</THINK>keep") == "keep"
    assert clean_content("  <think>x</think>\n## h\n ") == "### h"


def test_coverage_counts_words_and_cjk_bigrams() -> None:
    assert coverage("deploy on friday", "we deploy every friday") == 1.0
    assert coverage("部署在周五", "部署在周五进行") == 1.0
    assert coverage("alpha beta gamma delta", "alpha") == 0.25


@given(st.text(max_size=300))
def test_any_reply_yields_a_plan_within_the_batch(text: str) -> None:
    checked = parse_reply(text, BATCH, LIMITS)
    assert checked.plan.named_ids() <= set(BATCH)


@given(
    st.lists(st.sampled_from(sorted(BATCH) + ["ghost"]), max_size=12),
    st.lists(st.lists(st.sampled_from(sorted(BATCH) + ["ghost"]), max_size=4), max_size=4),
)
def test_accepted_parts_never_share_ids(remove: list[str], groups: list[list[str]]) -> None:
    text = reply(
        remove=remove,
        merge=[
            {"removeIds": g, "mergedContent": " ".join(BATCH.get(i, "") for i in g) or "x"}
            for g in groups
        ],
        promote=[{"sourceIds": g, "section": "s", "content": "c"} for g in groups],
    )
    plan = parse_reply(text, BATCH, LIMITS).plan
    used = list(plan.remove) + [i for m in plan.merge for i in m.remove_ids]
    used += [i for p in plan.promote for i in p.source_ids]
    assert len(used) == len(set(used))
    assert len(plan.remove) <= len(BATCH) // 2
