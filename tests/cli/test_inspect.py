"""agents, show, sessions, recall, prompt through the command line."""

from __future__ import annotations

from markus_memory import open_agent
from markus_memory.prompt import render_memory_context

from .conftest import Invoke, as_json


def seed(agent: str = "al") -> str:
    with open_agent(agent) as mem:
        mem.knowledge.save_observation("The deploy runs on Fridays.")
        mem.knowledge.update_section("Team", "Ana leads the platform team.")
        mem.notebook.upsert("plan", "ship the importer")
        mem.state.update("build", "green")
        activity = mem.activities.start("task", "Fix the importer deploy")
        mem.activities.log(activity, "tool_call", "ran the importer tests")
        mem.activities.end(activity)
        session = mem.sessions.create()
        mem.sessions.append(session.id, {"role": "user", "content": "hello there"})
        mem.sessions.append(session.id, {"role": "assistant", "content": "hi"})
        return session.id


def test_agents_lists_every_agent(invoke: Invoke) -> None:
    assert "(none) — create one" in invoke("agents").output
    seed("alice")
    seed("bob")
    listed = as_json(invoke("agents", "--json"))
    assert [a["agent"] for a in listed["agents"]] == ["alice", "bob"]
    assert "alice" in invoke("agents").output


def test_show_gives_the_overview_with_budgets(invoke: Invoke) -> None:
    seed()
    data = as_json(invoke("show", "-a", "al", "--json"))
    assert data["notebook"]["agent_entries"] == 1
    assert data["notebook"]["entries"][0]["chars"] == len("ship the importer")
    assert data["knowledge"]["observations"] == 1
    assert data["knowledge"]["observations_limit"] == 500
    assert data["knowledge"]["sections"] == [
        {"name": "Team", "chars": len("Ana leads the platform team."), "limit": 3000}
    ]
    assert [e["key"] for e in data["state"]] == ["build"]
    assert [a["label"] for a in data["recent_activities"]] == ["Fix the importer deploy"]
    text = invoke("show", "-a", "al").output
    for needle in ("plan", "observations 1/500", "Team", "28/3000", "build", "importer deploy"):
        assert needle in text


def test_reading_an_unknown_agent_exits_1_and_says_how_to_create_it(invoke: Invoke) -> None:
    result = invoke("show", "-a", "ghost", code=1)
    assert "markus-memory init --agent ghost" in result.output
    assert "Traceback" not in result.output


def test_sessions_list_and_show(invoke: Invoke) -> None:
    session_id = seed()
    listed = as_json(invoke("sessions", "-a", "al", "--json"))
    assert [s["id"] for s in listed] == [session_id]
    shown = as_json(invoke("sessions", "-a", "al", "--show", session_id, "--last", "1", "--json"))
    assert [m["content"] for m in shown["messages"]] == ["hi"]
    assert "[user] hello there" in invoke("sessions", "-a", "al", "--show", session_id).output
    invoke("sessions", "-a", "al", "--show", "sess_nope", code=1)


def test_recall_activities_search_list_and_detail(invoke: Invoke) -> None:
    seed()
    hits = as_json(invoke("recall", "activities", "importer", "-a", "al", "--json"))
    assert [h["label"] for h in hits] == ["Fix the importer deploy"]
    assert hits[0]["score"] is not None
    listed = as_json(invoke("recall", "activities", "-a", "al", "--type", "task", "--json"))
    assert [a["id"] for a in listed] == [hits[0]["id"]]
    assert as_json(invoke("recall", "activities", "-a", "al", "--type", "chat", "--json")) == []
    detail = as_json(invoke("recall", "activity", hits[0]["id"], "-a", "al", "--json"))
    assert "ran the importer tests" in [entry["content"] for entry in detail["logs"]]
    assert (
        "ran the importer tests" in invoke("recall", "activity", hits[0]["id"], "-a", "al").output
    )
    invoke("recall", "activity", "act-nope", "-a", "al", code=1)


def test_prompt_prints_the_rendered_context(invoke: Invoke) -> None:
    seed()
    for profile in ("default", "reflex"):
        with open_agent("al") as mem:
            expected = render_memory_context(mem, profile).text
        assert invoke("prompt", "-a", "al", "--profile", profile).stdout == expected + "\n"
    data = as_json(invoke("prompt", "-a", "al", "--json"))
    assert "Ana leads" in data["stable"] and "ship the importer" in data["volatile"]
    invoke("prompt", "-a", "al", "--profile", "chatty", code=2)


def test_recall_conversation_finds_a_turn_with_its_context(invoke: Invoke) -> None:
    with open_agent("al") as mem:
        session = mem.sessions.create()
        for role, text, speaker in [
            ("user", "Where did you go last summer?", "Mel"),
            ("assistant", "We went camping at Lake Tahoe.", "Caroline"),
            ("user", "Sounds lovely.", "Mel"),
        ]:
            mem.sessions.append(
                session.id, {"role": role, "content": text, "metadata": {"speaker": speaker}}
            )
    hits = as_json(invoke("recall", "conversation", "camping Tahoe", "-a", "al", "--json"))
    assert hits[0]["text"] == "We went camping at Lake Tahoe."
    assert [t["text"] for t in hits[0]["before"]] == ["Where did you go last summer?"]
    by_speaker = as_json(
        invoke("recall", "conversation", "camping", "-a", "al", "--role", "Mel", "--json")
    )
    assert all(h["speaker"] == "Mel" for h in by_speaker)
    later = as_json(
        invoke("recall", "conversation", "camping", "-a", "al", "--since", "2999-01-01", "--json")
    )
    assert later == []
    text = invoke("recall", "conversation", "Tahoe", "-a", "al").output
    assert "> [Caroline] We went camping at Lake Tahoe." in text
    assert "[Mel] Where did you go last summer?" in text
