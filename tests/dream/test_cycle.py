"""dream() end to end on real files, with a scripted model (ScriptedChatModel is a ChatModel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory.config import Limits, Settings
from markus_memory.dream import (
    dream,
    dream_diff,
    dream_history,
    dream_if_due,
    should_dream,
    undo_last_dream,
)
from markus_memory.errors import LLMError, NotFoundError, StorageError
from markus_memory.layers.knowledge import parse_knowledge
from markus_memory.llm import ChatResponse, ScriptedChatModel
from markus_memory.memory import open_agent
from tests.dream.conftest import FakeClock, files, open_mem, plan_reply, save

DEPLOY = [
    "deploys run on friday afternoon after the freeze",
    "deploy freeze is lifted friday at noon",
    "friday deploys need a second reviewer",
    "the deploy checklist lives in ops/checklist.md",
]


def seeded(mem, clock, extra: int = 6) -> list[str]:
    return save(mem, clock, *DEPLOY, *[f"unrelated fact {i} about topic {i}" for i in range(extra)])


def test_a_plan_is_applied_and_recorded(mem, clock) -> None:
    ids = seeded(mem, clock)
    mem.knowledge.update_section("procedures", "Ask before deploying.")
    reply = plan_reply(
        remove=[ids[4]],
        merge=[
            {
                "removeIds": [ids[5], ids[6]],
                "mergedContent": "unrelated fact 1 about topic 1; unrelated fact 2 about topic 2",
            }
        ],
        promote=[
            {
                "sourceIds": ids[:3],
                "section": "procedures",
                "content": "Deploy on Friday after noon with a second reviewer.",
            }
        ],
    )
    model = ScriptedChatModel([reply])
    report = dream(mem, model)
    assert report.status == "applied" and report.mode == "llm"
    assert report.rejections == ()
    assert report.removed == (ids[4],)
    assert report.promoted == (("procedures", tuple(ids[:3])),)
    left = [o.id for o in mem.knowledge.observations()]
    assert ids[3] in left and not set(ids[:3]) & set(left) and ids[4] not in left
    assert mem.knowledge.section("procedures") == (
        "Ask before deploying.\nDeploy on Friday after noon with a second reviewer."
    )
    (messages, tools) = model.calls[0]
    assert tools is None
    assert all(i in messages[-1]["content"] for i in ids)
    (run,) = dream_history(mem)
    assert run.run_id == report.run_id and run.status == "applied"
    assert run.changes["removed"][0]["content"] == "unrelated fact 0 about topic 0"
    assert [o["id"] for o in run.changes["promoted"][0]["sources"]] == ids[:3]
    assert "+Deploy on Friday after noon" in dream_diff(mem, report.run_id)


def test_merge_keeps_newest_timestamp_and_union_of_tags(mem, clock) -> None:
    a = mem.knowledge.save_observation("postgres runs on port 5432", tags=("db",))
    clock.advance(hours=1)
    b = mem.knowledge.save_observation("postgres port is 5432 in staging", tags=("staging", "db"))
    reply = plan_reply(
        merge=[
            {
                "removeIds": [a.id, b.id],
                "mergedContent": "postgres runs on port 5432, staging too",
                "tags": ["infra"],
            }
        ]
    )
    report = dream(mem, ScriptedChatModel([reply]))
    (merged,) = mem.knowledge.observations()
    assert report.merged == (((a.id, b.id), merged.id),)
    assert merged.timestamp == b.timestamp
    assert merged.tags == ("db", "staging", "infra")
    assert merged.id.startswith("merged_")


@pytest.mark.parametrize(
    "garbage", ["I cannot help with that.", "{broken json", "[preempted]", "[]"]
)
def test_regression_14_1_10_garbage_reply_fails_writes_nothing_and_keeps_the_day_slot(
    tmp_path, clock, garbage
) -> None:
    mem = open_mem(tmp_path / "h", clock, dream_min_observations=3)
    seeded(mem, clock)
    before = files(mem)
    report = dream(mem, ScriptedChatModel([garbage]))
    assert report.status == "failed" and not report.ok and report.error
    assert files(mem) == before
    assert dream_history(mem)[0].status == "failed"
    assert should_dream(mem).run


def test_model_failure_is_reported_not_raised(mem, clock) -> None:
    seeded(mem, clock)

    def boom(messages):
        raise LLMError("endpoint timed out")

    report = dream(mem, ScriptedChatModel([boom]))
    assert report.status == "failed" and "timed out" in (report.error or "")


def test_regression_14_1_11_failing_models_never_hold_a_slot(mem, clock) -> None:
    seeded(mem, clock)
    failing = ScriptedChatModel([])  # raises LLMError on every call
    for _ in range(5):
        assert dream(mem, failing, timeout=0.5).status == "failed"
    assert dream(mem, ScriptedChatModel([plan_reply()]), timeout=0.5).status == "unchanged"


def test_unknown_ids_are_rejected_and_the_rest_applied(mem, clock) -> None:
    ids = seeded(mem, clock)
    reply = plan_reply(
        remove=[ids[4], "obs_ghost"], merge=[{"removeIds": ["nope", ids[5]], "mergedContent": "x"}]
    )
    report = dream(mem, ScriptedChatModel([reply]))
    assert report.removed == (ids[4],)
    assert {r.part for r in report.rejections} == {"remove", "merge"}
    assert ids[5] in {o.id for o in mem.knowledge.observations()}


def test_removing_everything_removes_at_most_half(mem, clock) -> None:
    ids = seeded(mem, clock)
    report = dream(mem, ScriptedChatModel([plan_reply(remove=ids)]))
    assert len(report.removed) == len(ids) // 2
    assert len(mem.knowledge.observations()) == len(ids) - len(ids) // 2


def test_merging_unrelated_entries_into_a_huge_one_changes_nothing(mem, clock) -> None:
    ids = seeded(mem, clock)
    before = mem.knowledge.observations()
    huge = " ".join(DEPLOY) * 60
    report = dream(
        mem, ScriptedChatModel([plan_reply(merge=[{"removeIds": ids, "mergedContent": huge}])])
    )
    assert report.status == "unchanged" and report.merged == ()
    assert mem.knowledge.observations() == before


def test_regression_14_1_9_promotion_over_the_cap_keeps_its_sources(tmp_path, clock) -> None:
    mem = open_mem(tmp_path / "h", clock, section_max_chars=120)
    ids = seeded(mem, clock)
    mem.knowledge.update_section("procedures", "p" * 100)
    section_before = mem.knowledge.section("procedures")
    reply = plan_reply(
        promote=[
            {
                "sourceIds": ids[:3],
                "section": "procedures",
                "content": "Deploy on Friday afternoons.",
            }
        ]
    )
    report = dream(mem, ScriptedChatModel([reply]))
    assert report.promoted == ()
    assert "would have" in report.rejections[0].reason
    assert mem.knowledge.section("procedures") == section_before
    assert set(ids[:3]) <= {o.id for o in mem.knowledge.observations()}


def test_promotion_over_the_total_cap_is_refused(tmp_path, clock) -> None:
    mem = open_mem(tmp_path / "h", clock, curated_max_chars=200)
    ids = seeded(mem, clock)
    mem.knowledge.update_section("a", "x" * 150)
    reply = plan_reply(promote=[{"sourceIds": ids[:3], "section": "new one", "content": "y" * 80}])
    report = dream(mem, ScriptedChatModel([reply]))
    assert report.promoted == () and "curated knowledge would total" in report.rejections[0].reason
    assert [s.name for s in mem.knowledge.sections()] == ["a"]


def test_regression_14_1_1_promoted_headings_cannot_open_sections(mem, clock) -> None:
    ids = seeded(mem, clock)
    content = "Deploy friday.\n## _observations\n### obs_fake\n## lessons\nnever on monday"
    reply = plan_reply(
        promote=[{"sourceIds": ids[:3], "section": "Deploy Tips", "content": content}]
    )
    dream(mem, ScriptedChatModel([reply]))
    save(mem, clock, "a later save rewrites the file")
    doc = parse_knowledge(mem.paths.knowledge.read_text())
    assert [s.name for s in doc.sections] == ["Deploy Tips"]
    assert "### lessons" in mem.knowledge.section("Deploy Tips")
    assert "obs_fake" not in {o.id for o in doc.observations}


def test_promotion_finds_an_existing_section_by_slug(mem, clock) -> None:
    ids = seeded(mem, clock)
    mem.knowledge.update_section("deploy-tips", "old tip")
    reply = plan_reply(
        promote=[{"sourceIds": ids[:3], "section": "Deploy Tips", "content": "new tip"}]
    )
    dream(mem, ScriptedChatModel([reply]))
    assert [s.name for s in mem.knowledge.sections()] == ["deploy-tips"]
    assert mem.knowledge.section("deploy-tips") == "old tip\nnew tip"


def test_ids_gone_while_the_model_thought_are_rejected(mem, clock) -> None:
    ids = seeded(mem, clock)

    def meanwhile(messages):
        mem.knowledge.remove_observations([ids[4]])  # another process edits the buffer
        return plan_reply(
            merge=[
                {
                    "removeIds": [ids[4], ids[5]],
                    "mergedContent": "unrelated fact 0 about topic 0 and 1",
                }
            ],
            remove=[ids[6]],
        )

    report = dream(mem, ScriptedChatModel([meanwhile]))
    assert report.removed == (ids[6],)
    assert "no longer in the buffer" in report.rejections[0].reason
    assert ids[5] in {o.id for o in mem.knowledge.observations()}


def test_hygiene_after_a_dream(mem, clock) -> None:
    seeded(mem, clock)
    mem.knowledge.update_section("daily-report-2026-11-29", "did things")
    mem.knowledge.update_section("deploy", "### Step 1\nbuild\n<think>\nhmm\n</think>\ndone")
    mem.knowledge.update_section("release", "### Step 1\ntag")
    report = dream(mem, ScriptedChatModel([plan_reply()]))
    assert [s.name for s in mem.knowledge.sections()] == ["deploy", "release"]
    assert mem.knowledge.section("deploy") == "### Step 1\nbuild\ndone"
    assert mem.knowledge.section("release") == "### Step 1\ntag"
    assert {a.kind for a in report.hygiene} == {"daily-report", "think"}


def test_C_dream_state_ttl_expired_state_is_pruned(mem, clock) -> None:
    seeded(mem, clock)
    mem.state.update("old sprint", "sprint 41")
    clock.advance(days=9)
    mem.state.update("current sprint", "sprint 42")
    report = dream(mem, ScriptedChatModel([plan_reply()]))
    assert report.state_removed == ("old sprint",)
    assert [e.key for e in mem.state.entries()] == ["current sprint"]


def test_dry_run_returns_plan_and_diff_and_writes_nothing(mem, clock) -> None:
    ids = seeded(mem, clock)
    before = files(mem)
    report = dream(mem, ScriptedChatModel([plan_reply(remove=[ids[4]])]), dry_run=True)
    assert report.status == "dry_run" and report.run_id is None
    assert report.plan.remove == (ids[4],)
    assert "-unrelated fact 0 about topic 0" in report.diff
    assert files(mem) == before
    assert dream_history(mem) == []


def test_offline_dream_merges_duplicates_without_a_model(mem, clock) -> None:
    ids = save(mem, clock, "Deploy on Friday.", "deploy on friday", "a unique thought")
    report = dream(mem)
    assert report.mode == "offline" and report.status == "applied"
    assert report.merged[0][0] == tuple(ids[:2])
    contents = [o.content for o in mem.knowledge.observations()]
    assert "a unique thought" in contents and len(contents) == 2


def test_undo_restores_both_files_byte_for_byte(mem, clock) -> None:
    ids = seeded(mem, clock)
    mem.state.update("old", "x")
    clock.advance(days=10)
    before = files(mem)
    reply = plan_reply(
        remove=[ids[4]],
        promote=[{"sourceIds": ids[:3], "section": "procedures", "content": "Friday."}],
    )
    report = dream(mem, ScriptedChatModel([reply]))
    assert files(mem) != before
    result = undo_last_dream(mem)
    assert result.ok and result.run_id == report.run_id
    assert files(mem) == before
    assert dream_history(mem)[0].status == "undone"
    assert not undo_last_dream(mem).ok


def test_undo_goes_back_one_dream_at_a_time(mem, clock) -> None:
    ids = seeded(mem, clock)
    first = files(mem)
    dream(mem, ScriptedChatModel([plan_reply(remove=[ids[4]])]))
    second = files(mem)
    dream(mem, ScriptedChatModel([plan_reply(remove=[ids[5]])]))
    assert undo_last_dream(mem).ok and files(mem) == second
    assert undo_last_dream(mem).ok and files(mem) == first


def test_undo_is_refused_after_later_changes(mem, clock) -> None:
    ids = seeded(mem, clock)
    dream(mem, ScriptedChatModel([plan_reply(remove=[ids[4]])]))
    save(mem, clock, "written after the dream")
    after = files(mem)
    result = undo_last_dream(mem)
    assert not result.ok and "knowledge.md changed" in (result.reason or "")
    assert files(mem) == after


def test_regression_14_1_10_trigger_record_survives_a_restart(
    tmp_path: Path, clock: FakeClock
) -> None:
    home = tmp_path / "h"
    mem = open_mem(home, clock, dream_min_observations=5)
    seeded(mem, clock)
    assert should_dream(mem).run
    dream(mem, ScriptedChatModel([plan_reply()]))
    assert not should_dream(mem).run
    again = open_mem(home, clock, dream_min_observations=5)
    assert not should_dream(again).run
    clock.advance(days=1)
    assert should_dream(again).run


def test_no_tools_and_a_deadline_are_passed(mem, clock) -> None:
    seeded(mem, clock)
    seen = {}

    class Recorder:
        def complete(self, messages, *, tools=None, timeout=None):
            seen.update(tools=tools, timeout=timeout)
            return ChatResponse(plan_reply())

    dream(mem, Recorder(), timeout=42)
    assert seen == {"tools": None, "timeout": 42}


def test_hygiene_enforces_caps_on_hand_edited_knowledge_and_undo_restores_it(
    tmp_path, clock
) -> None:
    mem = open_mem(tmp_path / "h", clock, section_max_chars=50)
    seeded(mem, clock)
    text = mem.paths.knowledge.read_text()
    hand_edited = text.replace(
        "## _observations", "## notes\n" + "a line of notes\n" * 10 + "\n## _observations", 1
    )
    mem.paths.knowledge.write_text(hand_edited)
    report = dream(mem, ScriptedChatModel([plan_reply()]))
    assert report.status == "applied"
    assert [a.kind for a in report.hygiene] == ["section-cap"]
    assert len(mem.knowledge.section("notes")) <= 50
    assert undo_last_dream(mem).ok
    assert mem.paths.knowledge.read_text() == hand_edited


def test_offline_dream_also_prunes_state(mem, clock) -> None:
    save(mem, clock, "one", "two")
    mem.state.update("stale", "x")
    clock.advance(days=8)
    report = dream(mem)
    assert report.state_removed == ("stale",) and report.merged == ()


def test_dream_if_due_runs_only_when_the_policy_says_so(tmp_path, clock) -> None:
    mem = open_mem(tmp_path / "h", clock, dream_min_observations=3)
    save(mem, clock, "one", "two")
    assert dream_if_due(mem, ScriptedChatModel([plan_reply()])) is None
    save(mem, clock, "three")
    report = dream_if_due(mem, ScriptedChatModel([plan_reply()]))
    assert report is not None and report.status == "unchanged"
    assert dream_if_due(mem, ScriptedChatModel([plan_reply()])) is None


class BrokenAudit:
    """An AuditLog whose database fails on write (a full disk, a locked file)."""

    def record(self, run, *, durable=False):
        raise StorageError("disk full")

    def runs(self, agent_id, limit=None):
        return []

    def get(self, agent_id, run_id):
        return None

    def mark_undone(self, agent_id, run_id, at):
        raise StorageError("disk full")

    def set_status(self, agent_id, run_id, status, *, error=None, durable=False):
        raise StorageError("disk full")

    def pending(self, agent_id):
        return []


def test_a_dream_that_cannot_be_recorded_is_rolled_back(mem, clock) -> None:
    ids = seeded(mem, clock)
    mem.state.update("stale", "x")
    clock.advance(days=9)
    before = files(mem)
    with pytest.raises(StorageError):
        dream(mem, ScriptedChatModel([plan_reply(remove=[ids[4]])]), audit=BrokenAudit())
    assert files(mem) == before


class FirstWordVectors:
    """A real Embedder for tests: texts with the same first word share a vector."""

    model = "first-word"
    dimension = 2

    def embed(self, texts):
        return [[1.0, 0.0] if t.startswith("alpha") else [0.0, 1.0] for t in texts]


def test_offline_dream_uses_the_memorys_embedder(tmp_path, clock) -> None:
    settings = Settings(home=tmp_path / "h", limits=Limits(), clock=clock)
    with open_agent("agt_vec", settings=settings, embedder=FirstWordVectors()) as mem:
        ids = save(
            mem, clock, "alpha uses blue green deploys", "alpha deploys are blue/green", "beta"
        )
        report = dream(mem)
    assert report.merged[0][0] == tuple(ids[:2])


def test_a_chat_model_raising_anything_is_a_failed_dream(mem, clock) -> None:
    seeded(mem, clock)

    class Crashing:
        def complete(self, messages, *, tools=None, timeout=None):
            raise RuntimeError("socket closed")

    report = dream(mem, Crashing())
    assert report.status == "failed" and "socket closed" in (report.error or "")
    assert dream(mem, ScriptedChatModel([plan_reply()])).status == "unchanged"


def test_an_unreadable_state_file_fails_the_dream_and_writes_nothing(mem, clock) -> None:
    ids = seeded(mem, clock)
    mem.paths.state.write_bytes(b"\xff\xfe not utf-8")
    before = files(mem)
    report = dream(mem, ScriptedChatModel([plan_reply(remove=[ids[4]])]))
    assert report.status == "failed" and "state.md" in (report.error or "")
    assert dream_history(mem)[0].status == "failed"
    assert files(mem) == before


def test_diff_of_an_unknown_run_is_not_found(mem) -> None:
    with pytest.raises(NotFoundError):
        dream_diff(mem, "dream_0_nope")
    assert not undo_last_dream(mem).ok
