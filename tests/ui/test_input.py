"""Issue 28: form text normalised to LF, every parameter parsed strictly (400 with a plain
message, never 500), distinct page titles, speakers on the transcript, the timeline order."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from markus_memory import InvalidInputError, open_agent
from markus_memory.ui import create_app
from markus_memory.ui.web import parse_fields

from ..clocks import FakeClock
from .conftest import FormClient, Running, serving
from .seed import NOW, settings_for


def field(page: str, name: str, after: str = "") -> str:
    start = page.index(after) if after else 0
    found = re.search(rf'name="{name}" value="([^"]*)"', page[start:])
    assert found is not None, name
    return found.group(1)


def test_saving_an_unchanged_entry_with_crlf_changes_nothing(ui: Running) -> None:
    notebook, knowledge = ui.agent_file("NOTEBOOK.md"), ui.agent_file("knowledge.md")
    text = "Ship the fix.\n\n- then the summary\n- then the review"
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        mem.notebook.upsert("current-task", text)
        people = mem.knowledge.section("People")
    assert people is not None and "\n" in people
    before = notebook.read_bytes(), knowledge.read_bytes()
    ui.clock.advance(days=1)  # a save that rewrote the entry would stamp a new time
    with FormClient(base_url=ui.url) as client:
        page = client.get("/agents/alice/notebook").text
        saved = client.send_form(
            "/agents/alice/notebook/save",
            {
                "key": "current-task",
                "text": text.replace("\n", "\r\n"),
                "fingerprint": field(page, "fingerprint", 'value="current-task"'),
            },
        )
        page = client.get("/agents/alice/knowledge").text
        section = client.send_form(
            "/agents/alice/knowledge/section",
            {
                "name": "People",
                "content": people.replace("\n", "\r\n"),
                "fingerprint": field(page, "fingerprint", 'value="People"'),
            },
        )
    assert saved.status_code == section.status_code == 303
    assert (notebook.read_bytes(), knowledge.read_bytes()) == before
    with FormClient(base_url=ui.url) as client:
        page = client.get("/agents/alice/notebook").text
        client.send_form(
            "/agents/alice/notebook/save",
            {"key": "fresh", "text": "one\r\ntwo\rthree", "fingerprint": "absent"},
        )
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        assert mem.notebook.get("fresh").text == "one\ntwo\nthree"  # type: ignore[union-attr]
    assert b"\r" not in notebook.read_bytes()


BAD_QUERIES = [
    "/agents/alice/knowledge?page=%C2%B2",  # ² is a digit to str.isdigit, not to int()
    "/agents/alice/knowledge?page=" + "9" * 5000,
    "/agents/alice/knowledge?page=-1",
    "/agents/alice/knowledge?page=0",
    "/agents/alice/knowledge?page=1.5",
    "/agents/alice/knowledge?page=%EF%BC%91",  # a full-width 1
    "/agents/alice/knowledge?type=nonsense",
    "/agents/alice/knowledge?q=%FF%FE",
    "/agents/alice/knowledge?tag=%C3",
    "/agents/alice/conversations?q=%ED%A0%80",  # an encoded surrogate
    "/agents/alice/conversations/SESSION?hit=%C2%B2",
    "/agents/alice/conversations/SESSION?hit=-3",
    "/agents/alice/conversations/SESSION?hit=" + "1" * 5000,
    "/agents/alice/activities?q=%80",
    "/agents/alice/notebook?x=%00",
    "/login?next=%FF",
]


def test_malformed_parameters_answer_400_with_a_plain_message(ui: Running) -> None:
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        session = mem.sessions.list()[0].id
    with httpx.Client(base_url=ui.url) as client:
        for path in BAD_QUERIES:
            answer = client.get(path.replace("SESSION", session))
            assert answer.status_code == 400, (path[:80], answer.status_code)
            assert "text/html" in answer.headers["content-type"]
            assert "Traceback" not in answer.text and "<h1>Malformed" in answer.text, path[:80]
        fine = client.get(f"/agents/alice/conversations/{session}?hit=2")
        assert fine.status_code == 200


def test_invalid_utf8_in_a_form_is_refused_not_stored(ui: Running) -> None:
    before = ui.agent_file("NOTEBOOK.md").read_bytes()
    with FormClient(base_url=ui.url) as client:
        token = client.form_token()
        for body in (
            f"key=k&text=%FF%FE&fingerprint=absent&form_token={token}",
            f"key=%C3&text=t&fingerprint=absent&form_token={token}",
            f"key=k&text=%ED%A0%80&fingerprint=absent&form_token={token}",
        ):
            answer = client.post(
                "/agents/alice/notebook/save",
                content=body,
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
            assert answer.status_code == 400, body
            assert "not valid UTF-8" in answer.text
    assert ui.agent_file("NOTEBOOK.md").read_bytes() == before
    assert "\ufffd" not in ui.agent_file("NOTEBOOK.md").read_text()


def test_every_agent_page_has_its_own_title(ui: Running) -> None:
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        session = mem.sessions.list()[0].id
    paths = [
        "notebook",
        "knowledge",
        "state",
        "conversations",
        f"conversations/{session}",
        "activities",
        "dreams",
    ]
    titles = {}
    for agent in ("alice", "bob"):
        for path in paths if agent == "alice" else paths[:3]:
            page = httpx.get(f"{ui.url}/agents/{agent}/{path}").text
            found = re.search(r"<title>([^<]*)</title>", page)
            assert found is not None
            titles[(agent, path)] = found.group(1)
    assert len(set(titles.values())) == len(titles), titles
    assert titles[("alice", "knowledge")] == "Knowledge · alice · markus-memory"
    assert titles[("bob", "knowledge")] == "Knowledge · bob · markus-memory"
    assert titles[("alice", f"conversations/{session}")].startswith(f"Session {session} · ")


def test_the_transcript_names_the_speakers(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", FakeClock(NOW))
    with open_agent("carol", settings=settings) as mem:
        session = mem.sessions.get_or_create("chat_1")
        for role, speaker, text in (
            ("user", "Caroline", "We went camping at Lake Tahoe."),
            ("assistant", "melanie", "Sounds lovely."),
            ("user", None, "No speaker on this one."),
        ):
            message = {"role": role, "content": text}
            if speaker:
                message["metadata"] = {"speaker": speaker}
            mem.sessions.append(session.id, message)
    with serving(create_app(settings)) as url:
        page = httpx.get(f"{url}/agents/carol/conversations/{session.id}").text
    roles = re.findall(r'<span class="role[^"]*">([^<]*)</span>', page)
    assert roles == ["Caroline", "melanie", "user"]


@pytest.mark.parametrize("query", ["", "deploy"])
def test_the_timeline_says_in_which_order_it_lists(ui: Running, query: str) -> None:
    page = httpx.get(f"{ui.url}/agents/alice/knowledge?q={query}").text
    said = "best match first" if query else "newest first"
    other = "newest first" if query else "best match first"
    assert said in page and other not in page


def test_the_state_layer_dates_an_entry_as_asked(tmp_path: Path) -> None:
    """What the State page's 'expires in' and 'never expires' write through."""
    clock = FakeClock(NOW)
    with open_agent("carol", settings=settings_for(tmp_path / "home", clock)) as mem:
        today = NOW.date()
        assert mem.state.update("a", "dated", day=today - timedelta(days=5)).updated == (
            today - timedelta(days=5)
        )
        assert mem.state.update("b", "never", undated=True).updated is None
        assert mem.state.update("c", "today").updated == today
        with pytest.raises(InvalidInputError):
            mem.state.update("d", "both", day=today, undated=True)
        assert [(e.key, e.updated) for e in mem.state.entries()] == [
            ("a", today - timedelta(days=5)),
            ("b", None),
            ("c", today),
        ]
        clock.advance(days=365)
        assert mem.state.prune() == ["a", "c"]


field_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"))


@given(st.lists(st.tuples(field_text, field_text), max_size=8))
def test_parse_fields_reads_back_what_a_browser_encodes(pairs: list[tuple[str, str]]) -> None:
    """urlencode (what a browser sends) then parse_fields gives the fields back, values with
    every CR LF and lone CR as LF."""
    parsed = parse_fields(urlencode(pairs), "form")
    assert parsed == tuple((k, v.replace("\r\n", "\n").replace("\r", "\n")) for k, v in pairs)
