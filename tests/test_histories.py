"""Framework-owned histories: kept exactly as given, never compacted, forgotten on delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory import Limits, Settings, open_agent
from markus_memory.errors import InvalidInputError
from markus_memory.layers.histories import HistoryItem
from tests.backends import Backend, open_on

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def item(value: object, text: str = "", role: str = "user") -> HistoryItem:
    return HistoryItem(value=value, role=role, text=text)


def test_ten_thousand_items_come_back_deep_equal_and_uncompacted(
    backend: Backend, tmp_path: Path
) -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"q{n}"}]}
        if n % 3 == 0
        else {"type": "function_call_output", "call_id": f"c{n}", "output": f"result {n}"}
        for n in range(10_000)
    ]
    with open_on(backend, tmp_path) as mem:
        for start in range(0, len(items), 1000):
            chunk = items[start : start + 1000]
            mem.histories.append("chat-1", [item(v, json.dumps(v)) for v in chunk])
        assert mem.histories.count("chat-1") == 10_000
        assert [r.value for r in mem.histories.items("chat-1")] == items
        assert [r.value for r in mem.histories.newest("chat-1", 3)] == items[-3:]
        assert [r.value for r in mem.histories.items("chat-1", start=9_998)] == items[-2:]
        assert [r.value for r in mem.histories.items("chat-1", start=5, limit=2)] == items[5:7]
        assert mem.sessions.list() == []  # nothing in the Markus session files


def test_another_host_reads_the_same_history(backend: Backend, tmp_path: Path) -> None:
    if backend.url is None:
        pytest.skip("one SQLite home is one host")
    with open_on(backend, tmp_path / "a") as a:
        a.histories.append("chat", [item({"n": 1}, "hello from host a")])
        agent = a.agent_id
    with open_on(backend, tmp_path / "b", agent) as b:
        assert [r.value for r in b.histories.items("chat")] == [{"n": 1}]
        assert [i.key for i in b.histories.list()] == ["chat"]


def test_a_bad_item_changes_nothing(backend: Backend, tmp_path: Path) -> None:
    with open_on(backend, tmp_path) as mem:
        mem.histories.append("h", [item({"ok": 1})])
        for bad in (
            [item({"ok": 2}), item(float("nan"))],
            [item({"ok": 2}), item({"s": "\ud800"})],
            [item({"ok": 2}), item(object())],
            [item({"ok": 2}), item({"t": "x"}, text="\udfff")],
        ):
            with pytest.raises(InvalidInputError, match="item 1"):
                mem.histories.append("h", bad)
        deep: object = []
        for _ in range(5000):
            deep = [deep]
        with pytest.raises(InvalidInputError, match="nested too deeply"):
            mem.histories.append("h", [item(deep)])
        assert [r.value for r in mem.histories.items("h")] == [{"ok": 1}]


def test_a_five_mib_item_is_stored_and_its_index_text_shortened(
    backend: Backend, tmp_path: Path
) -> None:
    output = "log line\n" * (5 * 1024 * 1024 // 9)
    value = {"type": "function_call_output", "call_id": "c1", "output": output}
    with open_on(backend, tmp_path) as mem:
        mem.histories.append("h", [item(value, output, role="tool")])
        (got,) = mem.histories.items("h")
        assert got.value == value
        assert len(got.text) == mem.settings.limits.recall_text_max_chars


def test_an_item_over_the_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    limits = Limits(history_item_max_bytes=100)
    with open_agent("a1", settings=Settings(home=tmp_path, limits=limits)) as mem:
        with pytest.raises(InvalidInputError, match="too large"):
            mem.histories.append("h", [item("x" * 200)])
        assert mem.histories.count("h") == 0


def test_delete_and_pop_take_the_text_out_of_recall(backend: Backend, tmp_path: Path) -> None:
    with open_on(backend, tmp_path) as mem:
        mem.histories.append("h", [item({"n": 0}, "the weather is mild")])
        mem.histories.append("h", [item({"n": 1}, "my SSN is 078-05-1120")])
        assert mem.recall_conversation("SSN")
        popped = mem.histories.pop("h")
        assert popped is not None and popped.value == {"n": 1}
        assert mem.recall_conversation("SSN") == []
        assert mem.recall_conversation("weather")
        assert mem.histories.delete("h")
        assert mem.recall_conversation("weather") == []
        assert mem.histories.info("h") is None
        assert not mem.histories.delete("h")


def test_details_and_listing(backend: Backend, tmp_path: Path) -> None:
    with open_on(backend, tmp_path) as mem:
        mem.histories.set_details("h", title="Trip to Oslo", details={"tags": ["travel"]})
        mem.histories.append("g", [item(1)])
        infos = {i.key: i for i in mem.histories.list()}
        assert infos["h"].title == "Trip to Oslo" and infos["h"].details == {"tags": ["travel"]}
        assert infos["h"].count == 0 and infos["g"].count == 1


def test_a_markus_session_is_not_a_history(tmp_path: Path) -> None:
    with open_agent("a1", settings=Settings(home=tmp_path)) as mem:
        mem.histories.append("h", [item(1)])
        with pytest.raises(InvalidInputError, match="framework history"):
            mem.sessions.get_or_create("h")


def test_a_history_an_older_version_kept_in_a_session_file_moves_into_the_store(
    tmp_path: Path,
) -> None:
    limits = Limits(session_compact_trigger=20, session_compact_keep=10)
    with open_agent("a1", settings=Settings(home=tmp_path, limits=limits)) as mem:
        mem.sessions.get_or_create("old")
        for n in range(30):  # compacted in the file; every message is in the store
            mem.sessions.append("old", {"role": "user", "content": f"said {n}"})
    with open_agent("a1", settings=Settings(home=tmp_path, limits=limits)) as mem:
        records = mem.histories.items("old")
        assert [r.value["content"] for r in records] == [f"said {n}" for n in range(30)]
        assert all(r.legacy for r in records)
        assert mem.sessions.get("old") is None  # the file went
        mem.histories.append("old", [item({"n": 30})])
        assert mem.histories.count("old") == 31


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(JSON, max_size=5))
def test_any_json_comes_back_equal(tmp_path: Path, values: list[object]) -> None:
    with open_agent("a1", settings=Settings(home=tmp_path)) as mem:
        mem.histories.delete("p")
        mem.histories.append("p", [item(v) for v in values])
        assert [r.value for r in mem.histories.items("p")] == values


def test_histories_travel_with_export_and_import(postgres_url: str, tmp_path: Path) -> None:
    from markus_memory.transfer import export_agent
    from tests.postgres_support import new_agent_id

    agent = new_agent_id()
    values = [{"n": n, "text": f"said {n}"} for n in range(50)]
    files_a = Settings(home=tmp_path / "a", embedder="none")
    with open_agent(agent, settings=files_a) as mem:
        mem.histories.append("chat", [item(v, v["text"]) for v in values])
        mem.histories.set_details("chat", title="Chat", details={"user": "u1"})
    on_pg = Settings(home=tmp_path / "b", database_url=postgres_url, embedder="none")
    export_agent(files_a, on_pg, agent)
    files_c = Settings(home=tmp_path / "c", embedder="none")
    export_agent(on_pg, files_c, agent)
    for settings_ in (on_pg, files_c):
        with open_agent(agent, settings=settings_) as mem:
            assert [r.value for r in mem.histories.items("chat")] == values
            info = mem.histories.info("chat")
            assert info is not None and info.title == "Chat" and info.details == {"user": "u1"}
            assert mem.recall_conversation("said 7")


def test_a_stored_body_that_is_not_one_json_text_is_an_error_not_a_shifted_value(
    tmp_path: Path,
) -> None:
    import sqlite3

    settings = Settings.from_env(home=tmp_path)
    with open_agent("agent-1", settings=settings) as mem:
        mem.histories.append("chat", [item(n, str(n)) for n in range(4)])
        conn = sqlite3.connect(settings.database_path, isolation_level=None)
        try:  # two values in one row (written by other means): the list must not shift
            conn.execute("UPDATE transcript_messages SET body = '7, 8' WHERE body = '1'")
        finally:
            conn.close()
        with pytest.raises(json.JSONDecodeError):
            mem.histories.items("chat")
        assert [r.value for r in mem.histories.items("chat", start=2)] == [2, 3]
