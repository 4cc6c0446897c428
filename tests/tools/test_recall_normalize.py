"""recall_activity argument normalisation (the original's model-drift test cases)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory.tools import normalize_recall_args
from markus_memory.tools._recall_normalize import recall_limit


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"q": "list recent"},
        {"type": "list"},
        {"data": "list"},
        {"action": "list"},
        {"operation": "list"},
        {"query": "recent"},
        {"op": "listing"},
        {"mode": "LIST "},
    ],
)
def test_model_drift_spellings_mean_list(args: dict[str, object]) -> None:
    assert normalize_recall_args(args).operation == "list"


def test_type_used_as_operation_clears_the_type_filter() -> None:
    req = normalize_recall_args({"type": "list"})
    assert req.type is None
    assert normalize_recall_args({"type": "task_execution"}).type == "task_execution"


def test_action_get_with_activity_id() -> None:
    req = normalize_recall_args({"action": "get", "activity_id": "act_1"})
    assert (req.operation, req.activity_id) == ("get", "act_1")


@pytest.mark.parametrize("key", ["activity_id", "activityId", "id"])
def test_activity_id_alone_means_get(key: str) -> None:
    req = normalize_recall_args({key: "act_9"})
    assert (req.operation, req.activity_id) == ("get", "act_9")


@pytest.mark.parametrize("key", ["query", "q", "keywords"])
def test_query_alone_means_search(key: str) -> None:
    req = normalize_recall_args({key: "auth error"})
    assert (req.operation, req.query) == ("search", "auth error")


def test_query_prefixes_are_operations() -> None:
    assert normalize_recall_args({"query": "get act_5"}).activity_id == "act_5"
    assert normalize_recall_args({"query": "get act_5"}).operation == "get"
    req = normalize_recall_args({"query": "search deploy failure"})
    assert (req.operation, req.query) == ("search", "deploy failure")
    assert normalize_recall_args({"query": "search"}).query is None


def test_unknown_operation_falls_back_to_inference() -> None:
    assert normalize_recall_args({"operation": "bogus"}).operation == "list"
    assert normalize_recall_args({"operation": "bogus", "query": "x"}).operation == "search"


def test_task_id_spellings() -> None:
    assert normalize_recall_args({"taskId": "t1"}).task_id == "t1"
    assert normalize_recall_args({"task_id": "t2"}).task_id == "t2"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, 5),
        (0, 5),
        ("abc", 5),
        (-3, 1),
        (7, 7),
        (99, 20),
        ("3", 3),
        (2.7, 2),
        (float("nan"), 5),
        (float("inf"), 20),
        (True, 1),
    ],
)
def test_recall_limit_clamps_like_the_original(raw: object, expected: int) -> None:
    assert recall_limit(raw) == expected


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "operation",
                "op",
                "action",
                "mode",
                "data",
                "type",
                "query",
                "q",
                "keywords",
                "activity_id",
                "activityId",
                "id",
                "task_id",
                "taskId",
                "limit",
            ]
        ),
        st.one_of(st.none(), st.text(max_size=12), st.integers(), st.booleans()),
    )
)
def test_normalisation_always_yields_a_known_operation(args: dict[str, object]) -> None:
    req = normalize_recall_args(args)
    assert req.operation in ("list", "get", "search")
    assert 1 <= recall_limit(req.limit) <= 20
    if req.operation == "get":
        assert req.activity_id
