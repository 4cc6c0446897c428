from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits
from markus_memory.errors import CorruptFileError, InvalidIdError, InvalidInputError
from markus_memory.layers.notebook import (
    Notebook,
    NotebookDoc,
    NotebookEntry,
    age_label,
    parse_notebook,
    render_notebook,
)

from .conftest import GOLDEN, FakeClock
from .strategies import keys, texts

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
TRIAGE = (
    "## Current Situational Awareness (latest triage)\n"
    "Decision: Processing item [mbx_42]\nDeferred 2 item(s)\nReasoning: the user is waiting"
)


@pytest.fixture
def nb(paths: AgentPaths, lock: AgentLock, limits: Limits, clock: FakeClock) -> Notebook:
    return Notebook(paths, lock, limits, clock)


def fresh(nb: Notebook) -> Notebook:
    """A second handle on the same file, as another process or a restart would have."""
    return Notebook(
        AgentPaths(nb.path.parent), nb._lock, nb._limits, nb._clock, documents=nb.documents
    )


# golden files (the original Markus format, written by hand)


def test_golden_markus_file_parses_and_renders_byte_for_byte() -> None:
    raw = (GOLDEN / "notebook" / "markus_written.md").read_text(encoding="utf-8")
    doc = parse_notebook(raw, T0)
    assert [(e.key, e.managed) for e in doc.entries] == [
        ("current-task", "agent"),
        ("triage-decision", "system"),
        ("reflection", "cpp"),
    ]
    assert doc.entries[0].text == "Working on the release notes.\nNext: check the changelog."
    assert doc.entries[2].updated_at == datetime(2026, 7, 1, 11, 45, 0, 500000, timezone.utc)
    assert render_notebook(doc) == raw


def test_golden_hand_written_file_metadata_anywhere_and_defaults() -> None:
    raw = (GOLDEN / "notebook" / "hand_written.md").read_text(encoding="utf-8")
    doc = parse_notebook(raw, T0)
    plain, late = doc.entries
    assert (plain.key, plain.text, plain.managed, plain.updated_at) == (
        "plain",
        "no metadata at all",
        "agent",
        T0,
    )
    assert (late.text, late.managed) == ("body first", "system")
    assert late.updated_at == datetime(2026, 1, 2, 3, 4, 5, 6000, timezone.utc)


def test_golden_crlf_file_keeps_its_metadata() -> None:
    raw = (GOLDEN / "notebook" / "crlf.md").read_bytes().decode("utf-8")
    (entry,) = parse_notebook(raw, T0).entries
    assert (entry.key, entry.managed) == ("windows", "cpp")
    assert entry.updated_at == datetime(2026, 7, 1, 10, 0, tzinfo=timezone.utc)
    assert entry.text == "line one\r\nline two"


@pytest.mark.parametrize("name", ["empty.md", "empty_upper.md"])
def test_handles_empty_notebook(name: str) -> None:
    raw = (GOLDEN / "notebook" / name).read_text(encoding="utf-8")
    assert parse_notebook(raw, T0).entries == ()
    assert parse_notebook("", T0).entries == ()


def test_empty_notebook_renders_as_single_heading_line() -> None:
    assert render_notebook(NotebookDoc("# Notebook", ())) == "# Notebook\n"


# the original's test cases


def test_round_trips_entries_with_managed_tags(nb: Notebook) -> None:
    nb.upsert("current-task", "ship it")
    nb.upsert("triage-decision", "Decision: wait", managed="system")
    nb.upsert("reflection", "be brief", managed="cpp")
    text = nb.path.read_text(encoding="utf-8")
    assert "## current-task\n" in text
    assert text.count("<!-- managed: ") == 3
    got = {e.key: (e.managed, e.text) for e in fresh(nb).entries()}
    assert got == {
        "current-task": ("agent", "ship it"),
        "triage-decision": ("system", "Decision: wait"),
        "reflection": ("cpp", "be brief"),
    }


def test_defaults_to_agent_managed_when_no_tag_present(nb: Notebook) -> None:
    nb.path.write_text("# Notebook\n\n## k\nhello\n", encoding="utf-8")
    (entry,) = nb.entries()
    assert entry.managed == "agent"


def test_returns_empty_when_file_missing_and_reading_creates_nothing(nb: Notebook) -> None:
    assert nb.entries() == [] and nb.get("x") is None and nb.text() == ""
    assert not nb.path.exists()


def test_saves_and_loads_notebook_md_in_the_markus_layout(nb: Notebook, clock: FakeClock) -> None:
    nb.upsert("a", "first")
    clock.advance(seconds=1.5)
    nb.upsert("b", "second", managed="system")
    assert nb.path.read_text(encoding="utf-8") == (
        "# Notebook\n\n"
        "## a\n<!-- updated: 2026-07-01T12:00:00.000Z -->\n<!-- managed: agent -->\nfirst\n\n"
        "## b\n<!-- updated: 2026-07-01T12:00:01.500Z -->\n<!-- managed: system -->\nsecond\n"
    )


def test_evicts_oldest_entry_when_working_memory_exceeds_max(nb: Notebook, clock: FakeClock):
    for key in ["k1", "k2", "k3", "k4"]:
        assert nb.upsert(key, key).evicted is None
        clock.advance(minutes=1)
    nb.upsert("k1", "refreshed")  # k1 is now the newest
    clock.advance(minutes=1)
    result = nb.upsert("k5", "new")
    assert result.evicted == "k2"
    assert [e.key for e in fresh(nb).entries()] == ["k1", "k3", "k4", "k5"]


def test_eviction_ties_go_to_the_earliest_entry(nb: Notebook) -> None:
    for key in ["k1", "k2", "k3", "k4"]:
        nb.upsert(key, key)  # same clock: all tie
    assert nb.upsert("k5", "x").evicted == "k1"


def test_system_and_cpp_entries_do_not_count_toward_agent_slots(nb: Notebook) -> None:
    nb.upsert("s", "sys", managed="system")
    nb.upsert("c", "cpp", managed="cpp")
    evictions = [nb.upsert(f"k{i}", "x").evicted for i in range(4)]
    assert evictions == [None] * 4 and len(nb.entries()) == 6


def test_updating_keeps_position(nb: Notebook, clock: FakeClock) -> None:
    for key in ["a", "b", "c"]:
        nb.upsert(key, key)
    clock.advance(hours=1)
    nb.upsert("a", "changed")
    assert [e.key for e in fresh(nb).entries()] == ["a", "b", "c"]
    assert fresh(nb).get("a") == NotebookEntry("a", "changed", "agent", clock.now)


def test_clear_working_memory_removes_one_or_all_agent_entries(nb: Notebook) -> None:
    nb.upsert("a", "1")
    nb.upsert("b", "2")
    nb.upsert("s", "sys", managed="system")
    assert nb.clear("a") == 1
    assert nb.clear("missing") == 0
    assert nb.clear() == 1
    assert [e.key for e in fresh(nb).entries()] == ["s"]
    assert nb.clear(all=True) == 1
    assert fresh(nb).entries() == []
    assert nb.path.read_text(encoding="utf-8") == "# Notebook\n"


def test_clear_without_changes_does_not_write(nb: Notebook) -> None:
    nb.upsert("s", "sys", managed="system")
    before = os.stat(nb.path).st_mtime_ns, nb.path.read_bytes()
    assert nb.clear() == 0 and nb.clear("nope") == 0
    assert (os.stat(nb.path).st_mtime_ns, nb.path.read_bytes()) == before


def test_hand_written_preamble_is_kept(nb: Notebook) -> None:
    nb.path.write_text("# My notebook\n\nnotes for humans\n\n## a\nx\n", encoding="utf-8")
    nb.upsert("b", "y")
    assert nb.path.read_text(encoding="utf-8").startswith(
        "# My notebook\n\nnotes for humans\n\n## a"
    )


def test_duplicate_keys_in_a_hand_written_file_later_text_wins_first_position() -> None:
    doc = parse_notebook("# Notebook\n\n## a\none\n\n## b\nmid\n\n## a\ntwo\n", T0)
    assert [(e.key, e.text) for e in doc.entries] == [("a", "two"), ("b", "mid")]


def test_a_hand_edit_of_another_entry_is_never_overwritten_by_a_cached_copy(nb: Notebook):
    nb.upsert("a", "one")
    nb.upsert("b", "two")
    assert nb.get("b") is not None  # the parse is now cached
    raw = nb.path.read_text(encoding="utf-8")
    nb.path.write_text(raw.replace("two\n", "two, edited by hand\n"), encoding="utf-8")
    nb.upsert("a", "three")
    b = fresh(nb).get("b")
    assert b is not None and b.text == "two, edited by hand"


# regressions of the original (phantom entries, lost metadata)


def test_item15_triage_decision_block_survives_a_restart(nb: Notebook) -> None:
    for key in ["k1", "k2", "k3", "k4"]:
        nb.upsert(key, "agent note")
    nb.upsert("triage-decision", TRIAGE, managed="system")
    reloaded = fresh(nb).entries()
    assert [e.key for e in reloaded] == ["k1", "k2", "k3", "k4", "triage-decision"]
    assert reloaded[-1].text == TRIAGE and reloaded[-1].managed == "system"
    assert fresh(nb).upsert("k1", "still four agents").evicted is None


def test_item15_metadata_looking_content_lines_do_not_change_metadata(nb: Notebook) -> None:
    text = "line\n<!-- managed: cpp -->\n<!-- updated: 2001-01-01T00:00:00.000Z -->\ntail"
    nb.upsert("k", text)
    (entry,) = fresh(nb).entries()
    assert (entry.text, entry.managed, entry.updated_at.year) == (text, "agent", 2026)


@pytest.mark.parametrize("key", ["a\nb", "a\r\nb", "", "   ", " lead", "x" * 201, "tab\there"])
def test_item15_keys_that_would_break_the_file_are_refused(nb: Notebook, key: str) -> None:
    with pytest.raises(InvalidIdError):
        nb.upsert(key, "x")
    assert not nb.path.exists()


def test_item15_crlf_hand_edit_keeps_metadata_after_rewrite(nb: Notebook) -> None:
    nb.path.write_bytes((GOLDEN / "notebook" / "crlf.md").read_bytes())
    nb.upsert("new", "x")
    windows = fresh(nb).get("windows")
    assert windows is not None and windows.managed == "cpp"
    assert windows.text == "line one\r\nline two"


def test_item16_system_writes_persist_on_their_own_and_are_capped(
    paths: AgentPaths, lock: AgentLock, clock: FakeClock
) -> None:
    nb = Notebook(paths, lock, Limits(notebook_max_chars_per_system_entry=50), clock)
    result = nb.upsert("relevant-context", "r" * 80, managed="system")
    assert result.truncated and result.stored_chars == 50 and result.limit == 50
    entry = fresh(nb).get("relevant-context")
    assert entry is not None and entry.text == "r" * 50


def test_item16_agent_entries_are_cut_at_the_cap_and_told(nb: Notebook) -> None:
    result = nb.upsert("big", "a" * 5999 + " " + "b" * 100)
    assert result.truncated and result.stored_chars == 5999 and result.limit == 6000
    assert fresh(nb).get("big") == NotebookEntry("big", "a" * 5999, "agent", nb._clock())
    exact = nb.upsert("exact", "c" * 6000)
    assert not exact.truncated and exact.stored_chars == 6000


def test_item17_clear_without_key_keeps_system_and_cpp(nb: Notebook) -> None:
    nb.upsert("s", "sys", managed="system")
    nb.upsert("c", "cpp", managed="cpp")
    nb.upsert("a", "agent")
    assert nb.clear() == 1
    assert sorted(e.key for e in nb.entries()) == ["c", "s"]


@pytest.mark.parametrize("managed", ["system", "cpp"])
def test_item17_agent_write_over_system_key_is_refused(nb: Notebook, managed: str) -> None:
    nb.upsert("triage-decision", "sys", managed=managed)  # type: ignore[arg-type]
    before = nb.path.read_bytes()
    with pytest.raises(InvalidInputError, match="managed by the"):
        nb.upsert("triage-decision", "agent text")
    with pytest.raises(InvalidInputError, match="allow_system=True"):
        nb.clear("triage-decision")
    assert nb.path.read_bytes() == before


def test_item17_explicit_override_converts_but_never_exceeds_four_agents(
    nb: Notebook, clock: FakeClock
) -> None:
    for key in ["k1", "k2", "k3", "k4"]:
        nb.upsert(key, key)
        clock.advance(minutes=1)
    nb.upsert("sys", "s", managed="system")
    result = nb.upsert("sys", "mine now", allow_system=True)
    assert result.evicted == "k1"
    agents = [e.key for e in fresh(nb).entries() if e.managed == "agent"]
    assert agents == ["k2", "k3", "k4", "sys"]
    nb.upsert("c", "x", managed="cpp")
    assert nb.clear("c", allow_system=True) == 1


def test_item19_entries_without_updated_get_the_file_mtime_not_now(
    nb: Notebook, clock: FakeClock
) -> None:
    nb.path.write_text(
        "# Notebook\n\n## undated\nhand note\n\n"
        + "".join(
            f"## k{i}\n<!-- updated: 2026-07-01T11:00:00.000Z -->\n<!-- managed: agent -->\nx\n\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    past = datetime(2026, 6, 1, tzinfo=timezone.utc).timestamp()
    os.utime(nb.path, (past, past))
    first = nb.get("undated")
    assert first is not None and first.updated_at == datetime(2026, 6, 1, tzinfo=timezone.utc)
    clock.advance(hours=5)
    assert fresh(nb).get("undated") == first  # stable across loads
    assert nb.upsert("new", "x").evicted == "undated"


# bad input: documented error, nothing on disk changes


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((None, "x"), {}, InvalidIdError),
        ((42, "x"), {}, InvalidIdError),
        (("k", None), {}, InvalidInputError),
        (("k", ["a"]), {}, InvalidInputError),
        (("k", b"bytes"), {}, InvalidInputError),
        (("k", ""), {}, InvalidInputError),
        (("k", " \n\t "), {}, InvalidInputError),
        (("k", "x" * 10_000_000), {}, InvalidInputError),
        (("k" * 10_000_000, "x"), {}, InvalidIdError),
        (("k", "x"), {"managed": "admin"}, InvalidInputError),
        (("k", "x"), {"allow_system": "yes"}, InvalidInputError),
    ],
)
def test_bad_upsert_input_changes_nothing(nb: Notebook, args, kwargs, error) -> None:
    nb.upsert("keep", "me")
    before = nb.path.read_bytes()
    with pytest.raises(error):
        nb.upsert(*args, **kwargs)
    assert nb.path.read_bytes() == before


@pytest.mark.parametrize(
    "kwargs",
    [{"key": 5}, {"key": ""}, {"all": 1}, {"key": "keep", "all": True}, {"allow_system": None}],
)
def test_bad_clear_input_changes_nothing(nb: Notebook, kwargs) -> None:
    nb.upsert("keep", "me")
    before = nb.path.read_bytes()
    with pytest.raises(InvalidInputError):
        nb.clear(**kwargs)
    assert nb.path.read_bytes() == before


def test_invalid_utf8_file_raises_and_is_never_overwritten(nb: Notebook) -> None:
    bad = b"# Notebook\n\n## k\n\xff\xfe broken\n"
    nb.path.write_bytes(bad)
    with pytest.raises(CorruptFileError):
        nb.entries()
    with pytest.raises(CorruptFileError):
        nb.upsert("other", "x")
    with pytest.raises(CorruptFileError):
        nb.clear(all=True)
    assert nb.path.read_bytes() == bad


def test_notebook_path_that_is_a_directory_is_a_corrupt_file(nb: Notebook) -> None:
    nb.path.mkdir()
    with pytest.raises(CorruptFileError):
        nb.upsert("k", "x")


# age labels


@pytest.mark.parametrize(
    ("age", "label"),
    [
        (timedelta(seconds=-5), "just now"),
        (timedelta(minutes=4, seconds=59), "just now"),
        (timedelta(minutes=5), "recent"),
        (timedelta(minutes=29), "recent"),
        (timedelta(minutes=30), "~1h ago"),
        (timedelta(minutes=89), "~1h ago"),
        (timedelta(minutes=90), "~2h ago"),
        (timedelta(hours=2), "2h ago"),
        (timedelta(hours=2, minutes=30), "3h ago"),
        (timedelta(hours=3, minutes=30), "4h ago"),
        (timedelta(days=2), "48h ago"),
        (timedelta(hours=49), "49h ago"),
    ],
)
def test_age_label_rounds_half_up_like_javascript(age: timedelta, label: str) -> None:
    assert age_label(T0, T0 + age) == label


# properties

entries_st = st.builds(
    NotebookEntry,
    key=keys,
    text=texts.map(str.strip).filter(bool),
    managed=st.sampled_from(["agent", "system", "cpp"]),
    updated_at=st.integers(0, 4_000_000_000_000).map(
        lambda ms: datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    ),
)


def _unique(entries: list[NotebookEntry]) -> tuple[NotebookEntry, ...]:
    seen: dict[str, NotebookEntry] = {}
    for entry in entries:
        seen.setdefault(entry.key, entry)
    return tuple(seen.values())


@given(
    preamble=st.sampled_from(["# Notebook", "# NOTEBOOK", "# Notebook\n\nhuman note"]),
    entries=st.lists(entries_st, max_size=4).map(_unique),
)
def test_parse_inverts_render(preamble: str, entries: tuple[NotebookEntry, ...]) -> None:
    doc = NotebookDoc(preamble, entries)
    assert parse_notebook(render_notebook(doc), T0) == doc


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=75)
@given(key=keys, text=texts.filter(lambda t: t.strip()), managed=st.sampled_from(["agent", "cpp"]))
def test_any_text_survives_save_and_reload(nb: Notebook, key: str, text: str, managed) -> None:
    neighbour = NotebookEntry("before", "neighbour", "system", T0)
    nb.path.write_text(render_notebook(NotebookDoc("# Notebook", (neighbour,))), "utf-8")
    nb.upsert(key, text, managed=managed, allow_system=True)
    nb.upsert("after", "neighbour")
    got = {e.key: e.text for e in fresh(nb).entries()}
    assert got[key] == text.strip()
    if key != "before":  # an upsert of "before" itself replaces the neighbour
        assert got.get("before", "neighbour") == "neighbour"
    assert len(got) == (3 if key not in ("before", "after") else 2)


def test_fixture_paths_live_under_tmp(nb: Notebook, tmp_path: Path) -> None:
    assert tmp_path in nb.path.parents


def test_writes_reread_even_when_an_in_place_edit_kept_size_and_mtime(nb: Notebook) -> None:
    nb.upsert("a", "one")
    nb.upsert("b", "two")
    assert nb.get("b") is not None  # cached under the current signature
    st = os.stat(nb.path)
    with open(nb.path, "r+b") as handle:  # same inode, same size
        data = handle.read()
        handle.seek(0)
        handle.write(data.replace(b"two\n", b"TWO\n"))
    os.utime(nb.path, ns=(st.st_atime_ns, st.st_mtime_ns))
    nb.upsert("a", "three")
    b = fresh(nb).get("b")
    assert b is not None and b.text == "TWO"


hand_lines = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "## k",
                "## other key",
                "##",
                "## ",
                "<!-- managed: cpp -->",
                "<!-- managed: bogus -->",
                "<!-- updated: 2026-03-04T05:06:07.123456+02:00 -->",
                "<!-- updated: 0005-01-01T00:00:00Z -->",
                "<!-- updated: not a date -->",
                "\\",
                "\\## escaped",
                "",
                "\r",
            ]
        ),
        texts,
    ),
    max_size=12,
).map("\n".join)


@given(hand_lines)
def test_any_hand_written_file_is_stable_after_one_rewrite(text: str) -> None:
    doc = parse_notebook(text, datetime(2026, 5, 5, 1, 2, 3, 456789, timezone.utc))
    assert parse_notebook(render_notebook(doc), T0) == doc


def test_agent_slot_limit_follows_limits(paths: AgentPaths, lock: AgentLock, clock: FakeClock):
    nb = Notebook(paths, lock, Limits(notebook_max_agent_entries=1), clock)
    nb.upsert("a", "x")
    clock.advance(seconds=1)
    assert nb.upsert("b", "y").evicted == "a"
    assert [e.key for e in nb.entries()] == ["b"]
