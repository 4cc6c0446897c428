"""What a dream returns (DreamReport) and how its changes are written down for the audit."""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from typing import Any

from ..config import iso_ms
from ..layers.knowledge import Observation
from .apply import Applied
from .hygiene import HygieneAction
from .plan import Plan, Rejection


@dataclass(frozen=True)
class DreamReport:
    """The outcome of one dream.

    ``status`` is ``applied`` (written and recorded), ``unchanged`` (nothing to change: nothing
    written, recorded as such, nothing to undo), ``dry_run`` (nothing written) or ``failed``
    (nothing written; the day's slot is not used). ``diff`` is a unified diff of the files.
    ``skipped``: another dream of the agent was running (any host); ``error`` says so.
    """

    status: str
    mode: str  # "llm" or "offline"
    run_id: str | None
    plan: Plan
    rejections: tuple[Rejection, ...] = ()
    removed: tuple[str, ...] = ()
    merged: tuple[tuple[tuple[str, ...], str], ...] = ()  # (source ids, new id)
    promoted: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (section, source ids)
    hygiene: tuple[HygieneAction, ...] = ()
    state_removed: tuple[str, ...] = ()
    observations_before: int = 0
    observations_after: int = 0
    diff: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status != "failed"


def summarise(applied: Applied) -> dict[str, Any]:
    """The report fields that describe an application."""
    return {
        "removed": tuple(o.id for o in applied.removed + applied.dropped_empty),
        "merged": tuple((tuple(o.id for o in m.sources), m.result.id) for m in applied.merged),
        "promoted": tuple((p.section, tuple(o.id for o in p.sources)) for p in applied.promoted),
        "hygiene": applied.hygiene,
    }


def _obs(o: Observation) -> dict[str, Any]:
    return {
        "id": o.id,
        "type": o.type,
        "content": o.content,
        "timestamp": iso_ms(o.timestamp),
        "tags": list(o.tags),
    }


def changes_json(
    applied: Applied, rejections: tuple[Rejection, ...], state_removed: tuple[str, ...]
) -> dict[str, Any]:
    """Everything a run changed, with full content, as JSON-ready data."""
    return {
        "removed": [_obs(o) for o in applied.removed],
        "dropped_empty": [_obs(o) for o in applied.dropped_empty],
        "merged": [
            {"sources": [_obs(o) for o in m.sources], "result": _obs(m.result)}
            for m in applied.merged
        ],
        "promoted": [
            {
                "section": p.section,
                "content": p.content,
                "sources": [_obs(o) for o in p.sources],
                "before": p.body_before,
                "after": p.body_after,
            }
            for p in applied.promoted
        ],
        "rejections": [asdict(r) for r in rejections],
        "hygiene": [asdict(a) for a in applied.hygiene],
        "state_removed": list(state_removed),
    }


def file_diff(name: str, before: str | None, after: str | None) -> str:
    """A unified diff of one file ('' when unchanged)."""
    if before == after:
        return ""
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        (after or "").splitlines(keepends=True),
        fromfile=f"a/{name}" if before is not None else "/dev/null",
        tofile=f"b/{name}" if after is not None else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
