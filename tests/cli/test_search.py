"""search, reindex and the doctor's index check through the command line."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

from markus_memory import open_agent
from markus_memory.config import Settings, default_home
from tests.clocks import FakeClock

from .conftest import Invoke, as_json


def seed() -> None:
    with open_agent("al") as mem:
        mem.knowledge.save_observation("The deploy script lives in ops/deploy.sh", tags=("ops",))
        mem.knowledge.save_observation("Ana prefers tea over coffee")
        mem.knowledge.update_section("Team", "Ana leads the platform team.")


def test_search_finds_observations_and_curated_sections(invoke: Invoke) -> None:
    seed()
    found = as_json(invoke("search", "deploy script", "-a", "al", "--json"))
    assert found["method"] == "bm25"
    assert "ops/deploy.sh" in found["hits"][0]["content"]
    curated = as_json(invoke("search", "platform team", "-a", "al", "--json"))
    assert any(h["source"] == "curated" for h in curated["hits"])
    text = invoke("search", "deploy", "-a", "al").output
    assert "ops/deploy.sh" in text and "hit(s)" in text


def test_search_without_a_query_lists_the_newest(invoke: Invoke) -> None:
    seed()
    found = as_json(invoke("search", "-a", "al", "--limit", "1", "--json"))
    assert [h["content"] for h in found["hits"]] == ["Ana prefers tea over coffee"]


def test_item20_search_without_query_lists_newest_first_without_scores(invoke: Invoke) -> None:
    seed()
    lines = invoke("search", "-a", "al").output.strip().splitlines()
    assert lines[0] == "2 newest observation(s)"
    assert "score" not in lines[1] and "0.000" not in "".join(lines)
    body = "\n".join(lines[3:])
    assert body.index("Ana prefers tea") < body.index("ops/deploy.sh")  # newest first


def test_item20_search_does_not_match_we_inside_answers(invoke: Invoke) -> None:
    with open_agent("al") as mem:
        mem.knowledge.save_observation("short answers are preferred")
        mem.knowledge.save_observation("we deploy with ops/deploy.sh")
    found = as_json(invoke("search", "how do we deploy?", "-a", "al", "--json"))
    assert [h["content"] for h in found["hits"]] == ["we deploy with ops/deploy.sh"]


def test_reindex_rebuilds_a_damaged_index(invoke: Invoke, isolated_home: Path) -> None:
    seed()
    invoke("search", "tea", "-a", "al")
    report = as_json(invoke("doctor", "--json"))
    (index,) = [c for c in report["checks"] if c["check"].startswith("search index")]
    assert index["ok"] and index["detail"].endswith("documents")
    with sqlite3.connect(isolated_home / "data.db") as conn:
        conn.execute(
            "DELETE FROM search_postings WHERE doc IN (SELECT doc FROM search_docs"
            " WHERE agent_id = 'al' AND doc_id LIKE 'obs_%')"
        )
    report = as_json(invoke("doctor", "--json", code=1))
    (bad,) = [c for c in report["checks"] if not c["ok"]]
    assert "2 without their full-text postings" in bad["detail"]
    assert as_json(invoke("reindex", "--json")) == [{"agent": "al", "documents": 3}]
    assert as_json(invoke("doctor", "--json"))["ok"] is True


def test_doctor_fix_rebuilds_the_index(invoke: Invoke, isolated_home: Path) -> None:
    seed()
    invoke("search", "tea", "-a", "al")
    with sqlite3.connect(isolated_home / "data.db") as conn:
        conn.execute("UPDATE search_docs SET digest = 'x' WHERE agent_id = 'al'")
    assert "stale" in invoke("doctor", code=1).output
    fixed = as_json(invoke("doctor", "--fix", "--json"))
    assert fixed["ok"] and [c["check"] for c in fixed["fixed"]] == [
        "search index matches knowledge.md"
    ]


def test_an_index_behind_a_hand_edit_is_not_a_problem(invoke: Invoke) -> None:
    seed()
    invoke("search", "tea", "-a", "al")
    with open_agent("al") as mem:
        text = mem.paths.knowledge.read_text(encoding="utf-8")
        mem.paths.knowledge.write_text(text + "\n", encoding="utf-8")
    report = as_json(invoke("doctor", "--json"))
    (index,) = [c for c in report["checks"] if c["check"].startswith("search index")]
    assert "behind" in index["detail"]


def test_reindex_an_unknown_agent_exits_1(invoke: Invoke) -> None:
    invoke("reindex", "-a", "ghost", code=1)


def test_search_and_recall_read_yesterday_against_now(invoke: Invoke) -> None:
    clock = FakeClock(datetime.now(timezone.utc) - timedelta(days=3))
    with open_agent("al", settings=Settings(home=default_home(), clock=clock)) as mem:
        for day in range(3):  # three days ago, the day before yesterday, yesterday
            text = "billing deploy rolled back" if day == 2 else "billing deploy billing green"
            mem.knowledge.save_observation(text)
            mem.sessions.get_or_create(f"chat_{day}")
            mem.sessions.append(f"chat_{day}", {"role": "user", "content": f"{text}, day {day}"})
            clock.advance(days=1)
    question = "what happened yesterday with the billing deploy?"
    found = as_json(invoke("search", question, "-a", "al", "--json"))
    assert found["hits"][0]["content"] == "billing deploy rolled back"
    recalled = as_json(invoke("recall", "conversation", question, "-a", "al", "--json"))
    assert recalled[0]["text"] == "billing deploy rolled back, day 2"
