"""One text analyser: a CJK word is found inside a longer run in knowledge, activities and
conversations, on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.analysis import cjk_pairs, cjk_phrase, tokens
from markus_memory.config import Settings
from tests.postgres_support import new_agent_id, postgres_url

__all__ = ["postgres_url"]

TEXT = "我们的数据很重要"  # "our data is important": 数据 sits inside the run


def test_cjk_runs_become_character_pairs() -> None:
    assert cjk_pairs(TEXT) == "我们 们的 的数 数据 据很 很重 重要"
    assert cjk_pairs("数 and 据") == "数 据" and cjk_pairs("plain words") == ""
    assert cjk_phrase("数据库") == "数据 据库" and cjk_phrase("deploy") == "deploy"
    assert "数据" in tokens(TEXT) and tokens("Running naïve") == ["run", "naiv"]


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if request.param == "sqlite":
        return Settings(home=tmp_path / "home")
    url = request.getfixturevalue("postgres_url")
    return Settings(home=tmp_path / "home", database_url=url)


def test_a_cjk_word_is_found_in_knowledge_activities_and_conversations(
    settings: Settings,
) -> None:
    with open_agent(new_agent_id(), settings=settings) as mem:
        mem.knowledge.save_observation(f"备注：{TEXT}")
        activity = mem.activities.start("task", f"整理{TEXT}")
        mem.activities.log(activity, "tool", "完成")
        sid = mem.sessions.create().id
        mem.sessions.append(sid, {"role": "user", "content": TEXT})
        mem.sessions.append(sid, {"role": "assistant", "content": "好的"})
        assert [h.content for h in mem.search("数据").hits] == [f"备注：{TEXT}"]
        assert [h.activity.id for h in mem.activities.search("数据")] == [activity]
        # The reply shares the hit's score through the neighbour stage: the hit comes first.
        assert mem.recall_conversation("数据", neighbours=0)[0].text == TEXT
        assert mem.recall_conversation("数据很", neighbours=0)[0].text == TEXT
        assert mem.recall_conversation("数学", neighbours=0) == []
