"""daily-logs/YYYY-MM-DD.md: the append-only audit trail of what the agent did each UTC day.

Each write appends ``\\n## [HH:MM:SS] Agent: <id>\\n\\n<summary>\\n`` (the original's entry) to the
file of the current UTC date, under the agent lock, with ``O_APPEND`` and ``fsync`` (the
directory is fsynced too when the file is new), so a returned write is on disk. The summary is
written as given (the original's ``## Daily Report`` summaries stay readable); the log is read
back as text, never parsed into entries.

When the documents live in PostgreSQL the logs do too (``held``): each write is one row of
``daily_log_entries`` and a day reads back as the same text its file would hold. Log files
found in the agent directory then are moved in (:meth:`DailyLog.move_in`), each day once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from .._fs import checked_agent_id, open_file, read_text, refuse_symlink
from .._lock import AgentLock
from ..config import AgentPaths, Clock, Limits
from ..errors import InvalidInputError
from ..storage.repos.conversations import DailyLogRepo

log = logging.getLogger(__name__)

MAX_INPUT_CHARS = 1_000_000
"""Summaries longer than this are refused: the log is read back into prompts."""
MAX_RECENT_DAYS = 366


@dataclass(frozen=True)
class DailyLogEntry:
    """One appended record: when, by whom, what, and the file it went to (None when the log
    is held in the database)."""

    day: date
    at: datetime
    agent_id: str
    summary: str
    path: Path | None


def _day(value: date | str | None, today: date) -> date:
    if value is None:
        return today
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise InvalidInputError(f"day must be a date or 'YYYY-MM-DD', got {value!r}")


class DailyLog:
    """The daily logs of one agent: ``write`` today's record, ``read`` a day, ``recent`` days."""

    def __init__(
        self,
        paths: AgentPaths,
        lock: AgentLock,
        limits: Limits,
        clock: Clock,
        *,
        agent_id: str | None = None,
        held: Callable[[], DailyLogRepo] | None = None,
    ) -> None:
        self.directory = paths.daily_logs_dir
        self._held = held
        # An id open_agent checked (an AgentId) is trusted; a plain string is checked here.
        self.agent_id = checked_agent_id(agent_id or paths.root.name)
        self._lock = lock
        self._limits = limits
        self._clock = clock

    def _now(self) -> datetime:
        return self._clock().astimezone(timezone.utc)

    def path_for(self, day: date | str | None = None) -> Path:
        """The log file of ``day``; SymlinkError if the logs folder is a link."""
        refuse_symlink(self.directory)
        return self.directory / f"{_day(day, self._now().date()).isoformat()}.md"

    def write(self, summary: str) -> DailyLogEntry:
        """Append ``summary`` to today's log (UTC). Empty or non-string summaries are refused."""
        if not isinstance(summary, str):
            raise InvalidInputError(f"summary must be a string, got {type(summary).__name__}")
        if not summary.strip():
            raise InvalidInputError("summary is required (got an empty string)")
        if len(summary) > MAX_INPUT_CHARS:
            raise InvalidInputError(
                f"summary is {len(summary)} characters; the log takes at most {MAX_INPUT_CHARS}"
            )
        now = self._now()
        record = f"\n## [{now.strftime('%H:%M:%S')}] Agent: {self.agent_id}\n\n{summary}\n"
        if self._held is not None:
            self._held().append_daily_log(self.agent_id, now.date().isoformat(), record)
            return DailyLogEntry(now.date(), now, self.agent_id, summary, None)
        path = self.path_for(now.date())
        with self._lock:
            _append_durably(path, record.encode("utf-8"))
        return DailyLogEntry(now.date(), now, self.agent_id, summary, path)

    def read(self, day: date | str | None = None) -> str:
        """The log of ``day`` (default: today, UTC), or ``""`` when there is none."""
        if self._held is not None:
            wanted = _day(day, self._now().date()).isoformat()
            return self._held().daily_log_text(self.agent_id, wanted) or ""
        return read_text(self.path_for(day)) or ""

    def recent(self, days: int = 3) -> str:
        """``# <date>\\n<log>`` for each of the last ``days`` days that has a log, newest first."""
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_RECENT_DAYS:
            raise InvalidInputError(f"days must be an integer from 1 to {MAX_RECENT_DAYS}")
        today = self._now().date()
        blocks = []
        for offset in range(days):
            day = today - timedelta(days=offset)
            content = self.read(day)
            if content:
                blocks.append(f"# {day.isoformat()}\n{content}")
        return "\n\n".join(blocks)

    def days(self) -> list[date]:
        """Every day that has a log, oldest first."""
        if self._held is not None:
            return [date.fromisoformat(d) for d in self._held().daily_log_days(self.agent_id)]
        return sorted(self._files())

    def _files(self) -> dict[date, Path]:
        if not self.directory.is_dir():
            return {}
        found = {}
        for child in self.directory.glob("*.md"):
            try:
                found[date.fromisoformat(child.stem)] = child
            except ValueError:
                continue
        return found

    def move_in(self) -> int:
        """Move the log files of the agent directory into the database (held logs only): each
        day's file is put before the entries written there that day, once, then deleted. The
        number of files moved."""
        if self._held is None:
            return 0
        moved = 0
        with self._lock:
            for day, path in sorted(self._files().items()):
                text = read_text(path)
                if text is None:
                    continue
                self._held().import_daily_log(self.agent_id, day.isoformat(), text)
                path.unlink(missing_ok=True)
                moved += 1
        return moved


def _append_durably(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not path.exists()
    fd = open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    if created and os.name != "nt":
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
