"""recall_activity on a real ActivityLog (the original's cases) and recall_conversation."""

from __future__ import annotations

import pytest

from markus_memory import AgentMemory, open_agent

from .conftest import call


@pytest.fixture
def activity(memory: AgentMemory) -> str:
    act = memory.activities.start("task_execution", "Fix auth error in login", task_id="t1")
    act_id = act if isinstance(act, str) else act.id
    memory.activities.log(act_id, "tool_start", "x" * 1000)
    memory.activities.log(act_id, "tool_end", "Tool shell failed: AuthError token expired")
    memory.activities.end(act_id, success=False)
    return act_id


def test_empty_args_list_recent_activities_when_there_are_none(memory: AgentMemory) -> None:
    result = call(memory, "recall_activity", {})
    assert result == {
        "status": "ok",
        "activities": [],
        "message": "No activities found.",
        "store": "activities",
    }


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"q": "list recent"},
        {"type": "list"},
        {"data": "list"},
        {"action": "list"},
        {"operation": "list", "type": "task_execution", "task_id": "t1", "limit": 3},
    ],
)
def test_list_and_model_drift_args(memory: AgentMemory, activity: str, args: dict) -> None:
    result = call(memory, "recall_activity", args)
    assert result["status"] == "ok"
    [shown] = result["activities"]
    assert shown["id"] == activity and shown["taskId"] == "t1"
    assert shown["success"] is False and "totalTools" in shown and shown["startedAt"]


def test_get_truncates_long_content(memory: AgentMemory, activity: str) -> None:
    result = call(memory, "recall_activity", {"action": "get", "activity_id": activity})
    assert result["status"] == "ok" and [log["seq"] for log in result["logs"]] == sorted(
        log["seq"] for log in result["logs"]
    )
    [long] = [log["content"] for log in result["logs"] if log["content"].startswith("xxx")]
    assert long == "x" * 500 + "...[truncated]"


def test_get_without_activity_id_errors_clearly(memory: AgentMemory) -> None:
    result = call(memory, "recall_activity", {"operation": "get"})
    assert result["status"] == "error" and "activity_id" in result["message"]
    assert "error" not in result


def test_get_of_another_agents_activity_is_refused(memory: AgentMemory, activity: str) -> None:
    """The original had no ownership check."""
    with open_agent("agt_other", home=memory.settings.home) as other:
        result = call(other, "recall_activity", {"activity_id": activity})
    assert result["status"] == "error" and "of yours" in result["message"]


def test_query_alone_searches(memory: AgentMemory, activity: str) -> None:
    result = call(memory, "recall_activity", {"query": "auth"})
    assert result["status"] == "ok" and result["activities"][0]["id"] == activity
    assert "totalTools" not in result["activities"][0]
    none = call(memory, "recall_activity", {"query": "kubernetes"})
    assert none["activities"] == [] and "No activities matching" in none["message"]


def test_search_without_query_errors(memory: AgentMemory) -> None:
    result = call(memory, "recall_activity", {"operation": "search"})
    assert result["status"] == "error" and '{"query":"auth error"}' in result["message"]


def test_unknown_operation_is_refused(memory: AgentMemory, activity: str) -> None:
    """The original fell back to list; #12 item 10 asks for a refusal that names the choices."""
    for args in ({"operation": "bogus"}, {"op": "forget"}, {"action": "delete everything"}):
        result = call(memory, "recall_activity", args)
        assert result["status"] == "error" and "list, get, search" in result["message"]
    assert call(memory, "recall_activity", {"op": "list recent"})["activities"][0]["id"] == activity
