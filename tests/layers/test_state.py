from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory._lock import AgentLock
from markus_memory._markdown import split_h2
from markus_memory.config import AgentPaths, Limits
from markus_memory.errors import CorruptFileError, InvalidIdError, InvalidInputError
from markus_memory.layers.state import (
    StateEntry,
    StateFile,
    chunk_date,
    parse_state_entry,
    prune_text,
    render_state_entry,
)

from .conftest import GOLDEN, FakeClock
from .strategies import keys, texts

HAND = (GOLDEN / "state" / "hand_written.md").read_text(encoding="utf-8")


@pytest.fixture
def state(paths: AgentPaths, lock: AgentLock, limits: Limits, clock: FakeClock) -> StateFile:
    return StateFile(paths, lock, limits, clock)


def test_update_writes_the_recommended_section_format(state: StateFile) -> None:
    entry = state.update("current-focus", "Reviewing PR 12\n## not a heading")
    assert entry == StateEntry(
        "current-focus", "Reviewing PR 12\n## not a heading", date(2026, 7, 1)
    )
    assert state.text() == (
        "# State\n\n## current-focus\n<!-- updatedAt: 2026-07-01 -->\n"
        "Reviewing PR 12\n\\## not a heading\n\n"
    )
    assert state.entries() == [entry]


def test_update_keeps_position_and_hand_written_sections_byte_for_byte(
    state: StateFile, clock: FakeClock
) -> None:
    state.path.write_text(HAND, encoding="utf-8")
    state.update("Deploy window", "Fridays and Mondays")
    state.update("new-key", "appended")
    text = state.text()
    before_pre, before = split_h2(HAND)
    after_pre, after = split_h2(text)
    assert after_pre == before_pre
    assert [s.name for s in after] == [
        "Current progress",
        "Deploy window",
        "Undated",
        "Impossible",
        "new-key",
    ]
    assert after[0] == before[0] and after[2] == before[2]
    assert after[3] == before[3]
    assert state.get("Deploy window") == StateEntry(
        "Deploy window", "Fridays and Mondays", date(2026, 7, 1)
    )


def test_update_after_a_heading_without_newline_starts_a_new_line(state: StateFile) -> None:
    state.path.write_text("# State\n## last", encoding="utf-8")
    state.update("k", "v")
    assert [e.key for e in state.entries()] == ["last", "k"]


def test_clear_removes_the_section_and_reports(state: StateFile) -> None:
    state.path.write_text(HAND, encoding="utf-8")
    assert state.clear("Undated") is True
    assert state.clear("Undated") is False
    assert "## Undated" not in state.text() and "## Impossible" in state.text()
    assert StateFile(state_paths(state), state._lock, Limits(), state._clock).clear("x") is False


def state_paths(state: StateFile) -> AgentPaths:
    return AgentPaths(state.path.parent)


def test_clear_on_missing_file_creates_nothing(state: StateFile) -> None:
    assert state.clear("k") is False and not state.path.exists()
    assert state.prune() == [] and not state.path.exists()


def test_item20_snapshot_lists_entries_not_the_raw_file(state: StateFile) -> None:
    assert state.snapshot() == ""
    state.path.write_text("\n\n" + HAND, encoding="utf-8")
    assert state.snapshot().split("\n") == [
        "- Current progress (2020-01-05): Silent day 3, waiting on review (2020-01-05).",
        "- Deploy window (2099-01-01): Fridays only.",
        "- Undated: no date here at all",
        "- Impossible: checked on 2024-13-45",
    ]
    assert state.snapshot(max_lines=1).startswith("- Current progress")
    assert state.snapshot(max_lines=0) == ""
    state.update("long", "word " * 100)
    assert len(state.snapshot().split("\n")[-1]) < 240


# C-dream-state-ttl and the original's expiry rule


def test_C_dream_state_ttl_removes_old_and_keeps_future(paths: AgentPaths, lock: AgentLock) -> None:
    now = FakeClock(datetime(2026, 7, 1, tzinfo=timezone.utc))
    state = StateFile(paths, lock, Limits(state_ttl_days=7), now)
    state.path.write_text(
        "# State\n\n## old\nupdatedAt: 2020-01-01\nstale\n\n## future\nupdatedAt: 2099-01-01\nok\n",
        encoding="utf-8",
    )
    assert state.prune() == ["old"]
    assert [e.key for e in state.entries()] == ["future"]


def test_prune_follows_the_original_rule_for_hand_written_chunks(state: StateFile) -> None:
    state.path.write_text(HAND, encoding="utf-8")
    assert state.prune() == ["Current progress"]
    text = state.text()
    assert text.startswith("# State\n\nNotes kept by hand since 2020-01-01.\n")  # preamble kept
    assert "## Undated" in text and "## Impossible" in text and "## Deploy window" in text


def test_prune_dates_own_sections_by_their_stamp_not_their_content(
    state: StateFile, clock: FakeClock
) -> None:
    state.update("quotes-old-date", "last seen 2001-01-01, updatedAt: 2001-01-01")
    clock.advance(days=6)
    assert state.prune() == []
    clock.advance(days=2)
    assert state.prune() == ["quotes-old-date"]
    assert state.text() == "# State\n\n"


def test_prune_boundary_is_strictly_older_than_ttl(state: StateFile, clock: FakeClock) -> None:
    state.update("k", "v")  # dated 2026-07-01 (midnight)
    clock.now = datetime(2026, 7, 8, 0, 0, tzinfo=timezone.utc)
    assert state.prune() == []
    clock.now = datetime(2026, 7, 8, 0, 0, 1, tzinfo=timezone.utc)
    assert state.prune(ttl_days=7) == ["k"]


def test_prune_of_everything_leaves_the_default_header(state: StateFile) -> None:
    state.path.write_text("## a 2020-01-01\nx\n", encoding="utf-8")
    assert state.prune() == ["a 2020-01-01"]
    assert state.text() == "# State\n"


def test_item37_state_md_has_a_writer_and_a_ttl(state: StateFile, clock: FakeClock) -> None:
    state.update("focus", "one")
    state.update("focus", "two")
    assert [(e.key, e.content) for e in state.entries()] == [("focus", "two")]
    clock.advance(days=30)
    assert state.prune() == ["focus"]


@pytest.mark.parametrize(
    ("chunk", "expected"),
    [
        ("## x\nUPDATEDAT 2024-02-03 and 2020-01-01", date(2024, 2, 3)),
        ("## 2023-05-06 notes\nupdatedAt: 2024-01-01", date(2024, 1, 1)),
        ("## 2023-05-06 notes\nbody", date(2023, 5, 6)),
        ("## x\nchecked 2024-13-45", None),
        ("## x\nno date", None),
    ],
)
def test_chunk_date_matches_the_original_rule(chunk: str, expected: date | None) -> None:
    assert chunk_date(chunk) == expected


# bad input


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((None, "x"), InvalidIdError),
        (("a\nb", "x"), InvalidIdError),
        (("", "x"), InvalidIdError),
        (("k", None), InvalidInputError),
        (("k", 3), InvalidInputError),
        (("k", ""), InvalidInputError),
        (("k", "  \n "), InvalidInputError),
        (("k", "x" * 10_000_000), InvalidInputError),
    ],
)
def test_bad_update_input_changes_nothing(state: StateFile, args, error) -> None:
    state.path.write_text(HAND, encoding="utf-8")
    with pytest.raises(error):
        state.update(*args)
    assert state.path.read_text(encoding="utf-8") == HAND


@pytest.mark.parametrize("ttl", [-1, 1.5, "7", True])
def test_bad_prune_ttl_is_refused(state: StateFile, ttl) -> None:
    state.path.write_text(HAND, encoding="utf-8")
    with pytest.raises(InvalidInputError):
        state.prune(ttl)
    assert state.path.read_text(encoding="utf-8") == HAND


@pytest.mark.parametrize("max_lines", [-1, "5", 2.0])
def test_bad_snapshot_lines_are_refused(state: StateFile, max_lines) -> None:
    with pytest.raises(InvalidInputError):
        state.snapshot(max_lines)


def test_invalid_utf8_state_raises_and_is_left_alone(state: StateFile) -> None:
    bad = b"# State\n\n## k\n\xc3\x28\n"
    state.path.write_bytes(bad)
    for action in (state.entries, state.prune, lambda: state.update("k", "v")):
        with pytest.raises(CorruptFileError):
            action()
    with pytest.raises(CorruptFileError):
        state.clear("k")
    assert state.path.read_bytes() == bad


# properties

entries_st = st.builds(
    StateEntry,
    key=keys,
    content=texts.map(str.strip).filter(bool),
    updated=st.one_of(st.none(), st.dates()),
)


@given(entries_st)
def test_parse_inverts_render(entry: StateEntry) -> None:
    assert parse_state_entry(render_state_entry(entry)) == entry


near_dates = st.one_of(st.none(), st.dates(date(2026, 6, 1), date(2026, 7, 31)))
near_now = st.datetimes(
    datetime(2026, 7, 1), datetime(2026, 7, 20), timezones=st.just(timezone.utc)
) | st.sampled_from([datetime(2026, 7, 8, tzinfo=timezone.utc)])


@given(
    st.lists(
        st.builds(StateEntry, key=keys, content=st.just("x"), updated=near_dates),
        max_size=5,
        unique_by=lambda e: e.key,
    ),
    near_now,
)
def test_prune_keeps_exactly_the_fresh_sections(entries, now) -> None:
    text = "# State\n\n" + "".join(render_state_entry(e).render() for e in entries)
    pruned, removed = prune_text(text, now, 7)
    kept = [s.name for s in split_h2(pruned)[1]]
    assert len(kept) + len(removed) == len(entries)
    for entry in entries:
        cutoff = now - timedelta(days=7)
        fresh = (
            entry.updated is None
            or entry.updated > cutoff.date()
            or (entry.updated == cutoff.date() and cutoff.time() == time(0))
        )
        assert (entry.key in kept) if fresh else (entry.key in removed)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=75)
@given(key=keys, content=texts.filter(lambda t: t.strip()))
def test_any_text_survives_save_and_reload(state: StateFile, key: str, content: str) -> None:
    state.path.write_text(HAND, encoding="utf-8")
    state.update(key, content)
    got = StateFile(state_paths(state), state._lock, Limits(), state._clock).get(key)
    assert got is not None and got.content == content.strip()
    if key not in {"Current progress", "Deploy window", "Undated", "Impossible"}:
        assert state.text().startswith(HAND)
