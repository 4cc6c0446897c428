from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits
from markus_memory.errors import CorruptFileError, InvalidIdError, InvalidInputError
from markus_memory.layers.daily_log import DailyLog

from .conftest import FakeClock


@pytest.fixture
def log(paths: AgentPaths, lock: AgentLock, limits: Limits, clock: FakeClock) -> DailyLog:
    return DailyLog(paths, lock, limits, clock)


def test_write_appends_the_markus_record_to_the_utc_day_file(
    log: DailyLog, clock: FakeClock
) -> None:
    clock.now = datetime(2026, 7, 1, 23, 59, 58, tzinfo=timezone(timedelta(hours=-5)))
    entry = log.write("[Chat with Bob] Q: hi... A: hello")
    log.write("## Daily Report\n\nall good")
    assert entry.day == date(2026, 7, 2) and entry.path.name == "2026-07-02.md"
    assert entry.path.read_text(encoding="utf-8") == (
        "\n## [04:59:58] Agent: agt_test\n\n[Chat with Bob] Q: hi... A: hello\n"
        "\n## [04:59:58] Agent: agt_test\n\n## Daily Report\n\nall good\n"
    )
    assert log.read("2026-07-02") == entry.path.read_text(encoding="utf-8")
    assert log.read() == log.read(date(2026, 7, 2))


def test_read_of_a_day_without_log_is_empty_and_creates_nothing(log: DailyLog) -> None:
    assert log.read() == "" and log.recent() == "" and log.days() == []
    assert not log.directory.exists()


def test_recent_lists_today_first_and_skips_missing_days(log: DailyLog, clock: FakeClock):
    log.write("day one")
    clock.advance(days=2)
    log.write("day three")
    assert log.recent(days=3) == (
        "# 2026-07-03\n\n## [12:00:00] Agent: agt_test\n\nday three\n"
        "\n\n# 2026-07-01\n\n## [12:00:00] Agent: agt_test\n\nday one\n"
    )
    assert log.recent(days=2).count("# 2026-") == 1
    assert log.days() == [date(2026, 7, 1), date(2026, 7, 3)]


def test_agent_id_defaults_to_the_directory_name_and_is_validated(
    paths: AgentPaths, lock: AgentLock, limits: Limits, clock: FakeClock
) -> None:
    assert DailyLog(paths, lock, limits, clock, agent_id="agt_other").write("x").agent_id == (
        "agt_other"
    )
    with pytest.raises(InvalidIdError):
        DailyLog(paths, lock, limits, clock, agent_id="../evil")


@pytest.mark.parametrize("summary", [None, 5, b"x", "", "   \n", "x" * 10_000_000])
def test_bad_summary_is_refused_and_nothing_changes(log: DailyLog, summary) -> None:
    log.write("keep")
    before = log.path_for().read_bytes()
    with pytest.raises(InvalidInputError):
        log.write(summary)
    assert log.path_for().read_bytes() == before


@pytest.mark.parametrize("days", [0, -1, 1.5, "3", True, 10_000])
def test_bad_recent_days_are_refused(log: DailyLog, days) -> None:
    with pytest.raises(InvalidInputError):
        log.recent(days)


@pytest.mark.parametrize("day", ["yesterday", "2026-13-01", 20260701, "../../x"])
def test_bad_day_is_refused(log: DailyLog, day) -> None:
    with pytest.raises(InvalidInputError):
        log.read(day)


def test_invalid_utf8_log_raises_on_read(log: DailyLog) -> None:
    log.directory.mkdir()
    log.path_for().write_bytes(b"\n## x\n\n\xff\n")
    with pytest.raises(CorruptFileError):
        log.read()


def test_concurrent_writers_never_interleave_records(log: DailyLog) -> None:
    import threading

    def worker(n: int) -> None:
        for i in range(10):
            log.write(f"worker {n} record {i}\nsecond line {n}-{i}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records = log.read().split("\n## [")[1:]
    assert len(records) == 40
    for record in records:
        head, _, body = record.partition("\n\n")
        n, i = body.split(" record ")[0].split()[1], body.split(" record ")[1].split("\n")[0]
        assert body == f"worker {n} record {i}\nsecond line {n}-{i}\n"
