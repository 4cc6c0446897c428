"""daily-logs/YYYY-MM-DD.md: the append-only audit trail of what the agent did each UTC day.

Each write appends ``\\n## [HH:MM:SS] Agent: <id>\\n\\n<summary>\\n`` (the original's entry) to the
file of the current UTC date, under the agent lock, with ``O_APPEND`` and ``fsync`` (the
directory is fsynced too when the file is new), so a returned write is on disk. The summary is
written as given (the original's ``## Daily Report`` summaries stay readable); the log is read
back as text, never parsed into entries.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from .._fs import open_file, read_text, refuse_symlink, validate_id
from .._lock import AgentLock
from ..config import AgentPaths, Clock, Limits
from ..errors import InvalidInputError

MAX_INPUT_CHARS = 1_000_000
"""Summaries longer than this are refused: the log is read back into prompts."""
MAX_RECENT_DAYS = 366


@dataclass(frozen=True)
class DailyLogEntry:
    """One appended record: when, by whom, what, and the file it went to."""

    day: date
    at: datetime
    agent_id: str
    summary: str
    path: Path


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
    ) -> None:
        self.directory = paths.daily_logs_dir
        self.agent_id = validate_id("agent id", agent_id or paths.root.name)
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
        path = self.path_for(now.date())
        with self._lock:
            _append_durably(path, record.encode("utf-8"))
        return DailyLogEntry(now.date(), now, self.agent_id, summary, path)

    def read(self, day: date | str | None = None) -> str:
        """The log of ``day`` (default: today, UTC), or ``""`` when there is none."""
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
        if not self.directory.is_dir():
            return []
        found = []
        for child in self.directory.glob("*.md"):
            try:
                found.append(date.fromisoformat(child.stem))
            except ValueError:
                continue
        return sorted(found)


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
