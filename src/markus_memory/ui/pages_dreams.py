"""Dreams: history, each run's diff side by side, a dry-run preview, run and undo."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from starlette.responses import Response

from ..dream import dream, dream_history, undo_last_dream
from ..dream.cycle import audit_log
from ..dream.report import file_diff
from ..errors import NotFoundError
from .call import Call

HISTORY_LIMIT = 50
_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Row:
    """One line pair: (number, text, kind) on each side.

    ``kind``: "" (unchanged), "del", "ins", "gap" (lines left out) or "empty" (no line)."""

    left: tuple[int | None, str, str]
    right: tuple[int | None, str, str]


@dataclass
class FileDiff:
    name: str
    rows: list[Row] = field(default_factory=list)


def side_by_side(diff: str) -> list[FileDiff]:
    """A unified diff (as :func:`file_diff` writes it) as rows for two columns."""
    files: list[FileDiff] = []
    left_no = right_no = 0
    removed: list[tuple[int, str]] = []
    added: list[tuple[int, str]] = []

    def flush() -> None:
        for i in range(max(len(removed), len(added))):
            a = removed[i] if i < len(removed) else None
            b = added[i] if i < len(added) else None
            files[-1].rows.append(
                Row(
                    (a[0], a[1], "del") if a else (None, "", "empty"),
                    (b[0], b[1], "ins") if b else (None, "", "empty"),
                )
            )
        removed.clear()
        added.clear()

    for line in diff.splitlines():
        if line.startswith("--- "):
            continue
        if line.startswith("+++ "):
            name = line[4:].removeprefix("b/")
            files.append(FileDiff(name if name != "/dev/null" else "(removed)"))
            continue
        match = _HUNK.match(line)
        if match:
            flush()
            left_no, right_no = int(match.group(1)), int(match.group(2))
            if files[-1].rows:
                files[-1].rows.append(Row((None, "⋯", "gap"), (None, "⋯", "gap")))
            continue
        if not files:
            continue
        if line.startswith("-"):
            removed.append((left_no, line[1:]))
            left_no += 1
        elif line.startswith("+"):
            added.append((right_no, line[1:]))
            right_no += 1
        elif line.startswith("\\"):
            continue
        else:
            flush()
            files[-1].rows.append(Row((left_no, line[1:], ""), (right_no, line[1:], "")))
            left_no += 1
            right_no += 1
    if files:
        flush()
    return files


def dreams(call: Call) -> Response:
    runs = dream_history(call.memory, HISTORY_LIMIT)
    return call.page("dreams.html", runs=runs, outcome=None)


def run_detail(call: Call) -> Response:
    run_id = call.request.path_params["run"]
    run = audit_log(call.memory).get(call.memory.agent_id, run_id)
    if run is None:
        raise NotFoundError(f"no dream run {run_id!r} for agent {call.memory.agent_id!r}")
    files = run_files(run.knowledge_before, run.knowledge_after, run.state_before, run.state_after)
    return call.page("dream.html", run=run, files=files)


@lru_cache(maxsize=32)
def run_files(
    knowledge_before: str | None,
    knowledge_after: str | None,
    state_before: str | None,
    state_after: str | None,
) -> list[FileDiff]:
    """The side-by-side diff of a recorded run (its texts never change, so it is kept: a line
    diff of a full knowledge.md costs about 0.1 s)."""
    diff = file_diff("knowledge.md", knowledge_before, knowledge_after)
    return side_by_side(diff + file_diff("state.md", state_before, state_after))


def preview(call: Call) -> Response:
    report = dream(call.memory, dry_run=True)
    return call.page(
        "dream_preview.html", report=report, files=side_by_side(report.diff), applied=False
    )


def run_now(call: Call) -> Response:
    report = dream(call.memory)
    if report.status != "applied":
        reason = report.error or f"the dream ended {report.status}"
        return call.done("dreams", f"nothing applied: {reason}")
    return call.done(
        "dreams",
        f"dream {report.run_id} applied: {report.observations_before} → "
        f"{report.observations_after} observations",
    )


def undo(call: Call) -> Response:
    result = undo_last_dream(call.memory)
    if not result.ok:
        runs = dream_history(call.memory, HISTORY_LIMIT)
        return call.page("dreams.html", status=409, runs=runs, outcome=result)
    return call.done("dreams", f"undid dream {result.run_id}; knowledge.md and state.md restored")


ROUTES = (
    ("/dreams", "dreams", dreams, False),
    ("/dreams/preview", "dreams", preview, True),
    ("/dreams/run", "dreams", run_now, True),
    ("/dreams/undo", "dreams", undo, True),
    ("/dreams/{run}", "dreams", run_detail, False),
)
