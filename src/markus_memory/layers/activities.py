"""ActivityLog: one agent's episodes (start / log / end) and their recall (list / search / get).

Ownership is enforced on every call: an id that belongs to another agent is indistinguishable
from an unknown one (NotFoundError); the original let any agent read any activity by id.
Summaries, keywords and totals are computed at ``end`` from the logs actually stored, not from
a bounded in-memory buffer and not from a metadata field nobody sets (the original's summaries
were nearly empty). ``get`` cuts each log's content to ``Limits.recall_content_truncate``
characters + ``...[truncated]`` here, so the tool layer only renders.
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .._fs import checked_agent_id
from ..config import Clock, Limits, epoch_ms, parse_iso, rand36, utc_now
from ..errors import InvalidInputError, NotFoundError
from ..storage.repos.activities import (
    Activity,
    ActivityEnd,
    ActivityHit,
    ActivityLogEntry,
    ActivityRepo,
)

TRUNCATION_MARK = "...[truncated]"
MAX_LIST_LIMIT = 1000
MAX_TYPE_CHARS = 64
MAX_LABEL_CHARS = 1000
SUMMARY_MAX_CHARS = 500
_FILE_EXTENSIONS = frozenset(
    "py ts tsx js jsx mjs cjs json md txt yaml yml toml ini cfg sh sql html css go rs java "
    "kt c h cpp hpp rb php cs swift lock csv xml env log".split()
)
_PATH_CANDIDATE = re.compile(r"[\w.~/-]+")
_ERROR_CLASS = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception)|E[A-Z]{3,})\b")
_TOOL_FAILED = re.compile(r"^Tool (\S+) failed:\s*(.*)$", re.S)


@dataclass(frozen=True)
class ActivityDetail:
    """An activity with its logs in ``seq`` order."""

    activity: Activity
    logs: tuple[ActivityLogEntry, ...]


def _check_text(kind: str, value: object, max_chars: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{kind} must be a non-empty string")
    if len(value) > max_chars:
        raise InvalidInputError(f"{kind} is longer than {max_chars} characters")
    return value.strip()


def _types_filter(value: object) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        parts = value.split(",")
    elif isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        parts = list(value)
    else:
        raise InvalidInputError("type must be a string, a comma-separated list or a list of str")
    types = [p.strip() for p in parts if p.strip()]
    return types or None


def _file_paths(texts: Sequence[str]) -> list[str]:
    found: list[str] = []
    for text in texts:
        for candidate in _PATH_CANDIDATE.findall(text):
            path = candidate.rstrip(".-/")
            if len(path) < 3 or len(path) > 200 or "//" in path:
                continue
            ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
            has_slash = "/" in path and any(c.isalpha() for c in path)
            if (ext in _FILE_EXTENSIONS or (has_slash and "." in path)) and path not in found:
                found.append(path)
    return found


def _error_type(content: str) -> str:
    message = content
    failed = _TOOL_FAILED.match(content)
    if failed:
        message = failed.group(2)
    named = _ERROR_CLASS.search(message)
    if named:
        return named.group(1)
    head = message.split(":", 1)[0].strip()
    return head[:40] if head else "error"


def _strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings_in(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings_in(v)]
    return []


def summarize(logs: Sequence[ActivityLogEntry]) -> tuple[str, tuple[str, ...], int, int]:
    """(summary, keywords, total_tokens, total_tools) of an episode from its stored logs."""
    tools: list[str] = []
    errors: list[str] = []
    error_types: list[str] = []
    last_text = ""
    tokens = 0
    starts = ends = 0
    texts: list[str] = []
    for log in logs:
        if log.type == "tool_start":
            starts += 1
            name = log.content.strip() or str(log.metadata.get("toolName", "")).strip()
            if name and name not in tools:
                tools.append(name)
        elif log.type == "tool_end":
            ends += 1
        elif log.type == "error":
            errors.append(log.content[:100])
            kind = _error_type(log.content)
            if kind not in error_types:
                error_types.append(kind)
        elif log.type == "text" and log.content.strip() and not log.metadata.get("isThinking"):
            last_text = log.content.strip()
        elif log.type == "llm_request":
            used = log.metadata.get("tokensUsed")
            if isinstance(used, (int, float)) and not isinstance(used, bool) and used > 0:
                tokens += int(used)
        if log.type != "status":
            texts.append(log.content)
            texts.extend(_strings_in(log.metadata))
    paths = _file_paths(texts)[:5]
    sentences: list[str] = []
    if tools:
        used_on = f" on {', '.join(paths)}" if paths else ""
        sentences.append(f"Used {', '.join(tools[:8])}{used_on}.")
    if errors:
        plural = "error" if len(errors) == 1 else "errors"
        sentences.append(f"{len(errors)} {plural}: {'; '.join(errors[:2])}.")
    if last_text:
        sentences.append(" ".join(last_text[:200].split()))
    summary = " ".join(sentences)[:SUMMARY_MAX_CHARS]
    keywords: list[str] = []
    for word in [*tools, *error_types, *paths]:
        clean = word.replace(",", " ").strip()
        if clean and clean not in keywords:
            keywords.append(clean)
    return summary, tuple(keywords), tokens, max(starts, ends)


class ActivityLog:
    """The episodic layer of one agent over an :class:`ActivityRepo` backend."""

    def __init__(
        self,
        store: ActivityRepo,
        agent_id: str,
        clock: Clock = utc_now,
        limits: Limits | None = None,
    ) -> None:
        self.store = store
        # An id open_agent checked (an AgentId) is trusted; a plain string is checked here.
        self.agent_id: str = checked_agent_id(agent_id)
        self.clock = clock
        self.limits = limits if limits is not None else Limits()

    def start(
        self,
        type: str,
        label: str,
        task_id: str | None = None,
        mailbox_item_id: str | None = None,
    ) -> str:
        """Record the start of an episode; returns ``act-<agentId>-<ms>-<rand36(4)>``."""
        kind = _check_text("activity type", type, MAX_TYPE_CHARS)
        text = _check_text("activity label", label, MAX_LABEL_CHARS)
        for name, value in (("task_id", task_id), ("mailbox_item_id", mailbox_item_id)):
            if value is not None and not isinstance(value, str):
                raise InvalidInputError(f"{name} must be a string")
        now = self.clock()
        activity_id = f"act-{self.agent_id}-{epoch_ms(now)}-{rand36(4)}"
        self.store.insert_activity(
            Activity(
                id=activity_id,
                agent_id=self.agent_id,
                type=kind,
                label=text,
                started_at=now,
                task_id=task_id,
                mailbox_item_id=mailbox_item_id,
            )
        )
        self.log(activity_id, "status", f"Started: {text}")
        return activity_id

    def log(
        self,
        activity_id: str,
        type: str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Append an event; returns its ``seq`` (1, 2, 3 … per activity)."""
        kind = _check_text("log type", type, MAX_TYPE_CHARS)
        if not isinstance(content, str):
            raise InvalidInputError("log content must be a string")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInputError("log metadata must be a mapping")
        meta = dict(metadata) if metadata is not None else {}
        try:
            # Values JSON cannot encode are stored as their str(); keys must be strings.
            json.dumps(meta, default=str)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"log metadata is not JSON-serialisable: {exc}") from exc
        seq = self.store.append_log(
            self.agent_id, self._id(activity_id), kind, content, meta, self.clock()
        )
        if seq is None:
            raise NotFoundError(f"unknown activity {activity_id!r}")
        return seq

    def end(self, activity_id: str, success: bool = True) -> Activity:
        """Close an episode: log ``Completed``; totals, summary and keywords come from its logs."""
        self.log(activity_id, "status", "Completed")
        logs = self.store.activity_logs(self.agent_id, activity_id)
        summary, keywords, tokens, tools = summarize(logs)
        end = ActivityEnd(
            ended_at=self.clock(),
            total_tokens=tokens,
            total_tools=tools,
            success=success is not False,
            summary=summary,
            keywords=keywords,
        )
        if not self.store.end_activity(self.agent_id, activity_id, end):
            raise NotFoundError(f"unknown activity {activity_id!r}")
        return self._get_activity(activity_id)

    def list(
        self,
        type: str | Sequence[str] | None = None,
        task_id: str | None = None,
        before: datetime | str | None = None,
        limit: int = 30,
    ) -> list[Activity]:
        """Newest first; ``type`` is one type or a comma-separated list (SQL ``IN``)."""
        if task_id is not None and not isinstance(task_id, str):
            raise InvalidInputError("task_id must be a string")
        return self.store.query_activities(
            self.agent_id,
            types=_types_filter(type),
            task_id=task_id,
            before=self._moment(before),
            limit=self._limit(limit),
        )

    def search(self, query: str, limit: int = 10) -> builtins.list[ActivityHit]:
        """Ranked full-text search; a blank or all-1-char query finds nothing."""
        if not isinstance(query, str):
            raise InvalidInputError("query must be a string")
        return self.store.search_activities(self.agent_id, query, limit=self._limit(limit))

    def get(self, activity_id: str, *, max_content_chars: int | None = None) -> ActivityDetail:
        """The activity and its logs in order; content over the cap ends in ``...[truncated]``.

        The cap defaults to ``Limits.recall_content_truncate`` (500); pass 0 for full content.
        """
        activity = self._get_activity(activity_id)
        cap = (
            self.limits.recall_content_truncate if max_content_chars is None else max_content_chars
        )
        logs = self.store.activity_logs(self.agent_id, activity.id)
        if cap > 0:
            logs = [
                log
                if len(log.content) <= cap
                else ActivityLogEntry(
                    log.activity_id,
                    log.seq,
                    log.type,
                    log.content[:cap] + TRUNCATION_MARK,
                    log.metadata,
                    log.created_at,
                )
                for log in logs
            ]
        return ActivityDetail(activity, tuple(logs))

    def prune(self, before: datetime | str) -> int:
        """Delete this agent's activities started before ``before`` (logs and index too).

        Nothing prunes automatically; a retention job calls this (the original never pruned
        activities at all).
        """
        moment = self._moment(before)
        if moment is None:
            raise InvalidInputError("prune needs a 'before' timestamp")
        return self.store.prune_activities(self.agent_id, before=moment)

    def _get_activity(self, activity_id: str) -> Activity:
        activity = self.store.get_activity(self.agent_id, self._id(activity_id))
        if activity is None:
            raise NotFoundError(f"unknown activity {activity_id!r}")
        return activity

    @staticmethod
    def _id(activity_id: object) -> str:
        if not isinstance(activity_id, str):
            raise InvalidInputError("activity_id must be a string")
        if not activity_id.strip() or len(activity_id) > 512:
            raise NotFoundError(f"unknown activity {activity_id!r}")
        return activity_id

    @staticmethod
    def _limit(limit: object) -> int:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInputError("limit must be an integer")
        if limit < 1:
            raise InvalidInputError("limit must be at least 1")
        return min(limit, MAX_LIST_LIMIT)

    @staticmethod
    def _moment(value: datetime | str | None) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            if value.tzinfo is None:
                raise InvalidInputError("before must be timezone-aware")
            return value
        if isinstance(value, str):
            parsed = parse_iso(value)
            if parsed is not None:
                return parsed
        raise InvalidInputError(f"before must be an ISO timestamp, got {value!r}")
