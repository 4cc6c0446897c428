"""Copying one agent between two sides: exactly (``replace``), or adding only what the
destination lacks (``merge``), or into a destination that does not have it yet."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .._docs import is_document_name
from .._fs import atomic_write_bytes, read_bytes
from ..backend import MOVED_MARKER
from ..config import iso_ms
from ..errors import RefusedError
from ..storage.dream_runs import DreamRun
from ..storage.forget import forget_agent
from ._conversations import (
    SESSIONS,
    carried,
    conversation_file,
    copy_conversations,
    differs,
    session_texts,
)
from ._rows import AgentRows, merge_rows, read_rows, write_rows
from ._side import Side

Mode = Literal["new", "replace", "merge"]


@dataclass(frozen=True)
class Copied:
    """What copying one agent did."""

    documents: int = 0
    files: int = 0
    removed: int = 0
    rows: int = 0
    dream_runs: int = 0


def transient(name: str) -> bool:
    """Lock files and the temporary files of writes in progress: never copied. Every other
    file is, dot-names included (the memory tool lets a model create ``.notes``)."""
    return name == ".lock" or (name.startswith(".") and name.endswith((".lock", ".tmp")))


def plain_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Files of an agent directory that are not documents (sessions, daily logs, others)."""
    if not root.is_dir():
        return
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(directory, name)
            relative = path.relative_to(root).as_posix()
            if transient(name) or relative == MOVED_MARKER:
                continue
            if _is_document(relative) or not path.is_file():
                continue
            yield relative, path


def _is_document(relative: str) -> bool:
    return is_document_name(relative)


def _files(side: Side, agent_id: str, conversations: bool) -> list[tuple[str, Path]]:
    """The plain files a copy carries byte for byte (sessions and logs not, when they go in
    canonical form: ``_conversations``)."""
    return [
        (relative, path)
        for relative, path in plain_files(side.paths(agent_id).root)
        if not (conversations and conversation_file(relative))
    ]


def _rows(source: Side, target: Side, agent_id: str) -> tuple[AgentRows, AgentRows] | None:
    """The source's and the destination's rows (None: the two share one store, or the source
    has none to read)."""
    if source.backend.place == target.backend.place or not source.backend.has_episodic():
        return None
    return read_rows(source.episodic(), agent_id), read_rows(target.episodic(), agent_id)


def _runs(source: Side, target: Side, agent_id: str) -> tuple[list[DreamRun], list[DreamRun]]:
    """The source's dream runs (oldest first) and the destination's."""
    if source.audit_place() == target.audit_place() or not source.has_audit():
        return [], []
    runs = sorted(source.audit().runs(agent_id), key=lambda run: run.started_at)
    present = target.audit().runs(agent_id) if target.has_audit() else []
    return runs, present


def loses(source: Side, target: Side, agent_id: str) -> bool:
    """Whether an exact copy of the agent would change or remove anything the destination
    holds (so ``replace`` backs the destination up first)."""
    src_docs, dst_docs = source.documents(agent_id), target.documents(agent_id)
    try:
        texts, there = src_docs.dump(), dst_docs.dump()
    finally:
        src_docs.close()
        dst_docs.close()
    if any(texts.get(name) != text for name, text in there.items()):
        return True
    conversations = carried(source, target)
    if conversations and differs(source, target, agent_id):
        return True
    if not source.same_dir(target, agent_id):
        mine = dict(_files(source, agent_id, conversations))
        for relative, path in _files(target, agent_id, conversations):
            if relative not in mine or read_bytes(mine[relative]) != read_bytes(path):
                return True
    rows = _rows(source, target, agent_id)
    if rows is not None and not rows[1].empty and rows[0] != rows[1]:
        return True
    runs, present = _runs(source, target, agent_id)
    return bool({r.run_id for r in present} - {r.run_id for r in runs})


def copy_agent(source: Side, target: Side, agent_id: str, mode: Mode) -> Copied:
    """Copy one agent (both sides' document locks held while documents and files move)."""
    rows = _rows(source, target, agent_id)
    if mode == "new" and rows is not None and not rows[1].empty and rows[0] != rows[1]:
        raise RefusedError(
            f"agent {agent_id!r} already has other episodic rows (activities, mailbox, chat) "
            "at the destination; pass --replace (after a backup) or --merge"
        )
    runs, present_runs = _runs(source, target, agent_id)
    src_docs, dst_docs = source.documents(agent_id), target.documents(agent_id)
    dst_root = target.paths(agent_id).root
    same_dir = source.same_dir(target, agent_id)
    conversations = carried(source, target)
    try:
        with src_docs.lock(), dst_docs.lock():
            texts = src_docs.dump()
            present = dst_docs.names()
            files = [] if same_dir else _files(source, agent_id, conversations)  # in place
            existing = [] if same_dir else _files(target, agent_id, conversations)
            if conversations and not same_dir and mode == "new":
                existing += [(f"{SESSIONS}{s}", dst_root) for s in session_texts(target, agent_id)]
            if (present or existing) and mode == "new":
                raise RefusedError(
                    f"agent {agent_id!r} already has memory at the destination; pass "
                    "--replace (replace=True: an exact copy, after a backup) or --merge "
                    "(merge=True: add only what the destination lacks)"
                )
            held = {relative for relative, _ in existing}
            if mode == "merge":
                texts = {name: text for name, text in texts.items() if name not in present}
                files = [(relative, path) for relative, path in files if relative not in held]
            for name, text in texts.items():
                version = src_docs.version(name)
                dst_docs.write(name, text, modified_ns=version.modified_ns if version else None)
            for relative, path in files:
                stat = path.stat()
                target_path = dst_root / relative
                atomic_write_bytes(target_path, read_bytes(path))  # a link: SymlinkError
                os.utime(target_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            removed = 0
            if mode != "merge":
                removed += sum(dst_docs.delete(name) for name in present if name not in texts)
                copied = {relative for relative, _ in files}
                for relative, path in existing:
                    if relative not in copied:
                        path.unlink()
                        removed += 1
            moved_rows = 0 if rows is None else _write_rows(target, agent_id, rows, mode)
            carried_over = 0
            if conversations:
                carried_over = copy_conversations(source, target, agent_id, mode == "merge")
            copied_runs = _write_runs(target, agent_id, runs, present_runs, mode)
            if same_dir and target.database is not None and source.database is None:
                now = iso_ms(source.settings.clock())
                _mark_moved(dst_root, list(src_docs.names()), target.settings.database_url, now)
            elif target.database is None and mode != "merge":
                (dst_root / MOVED_MARKER).unlink(missing_ok=True)  # the files are current
    finally:
        src_docs.close()
        dst_docs.close()
    return Copied(len(texts), len(files) + carried_over, removed, moved_rows, copied_runs)


def _write_rows(target: Side, agent_id: str, rows: tuple[AgentRows, AgentRows], mode: Mode) -> int:
    mine, present = rows
    if mode == "merge":
        return merge_rows(target.episodic(), mine, present)
    if present == mine or mine.empty and present.empty:
        return 0
    if not present.empty:
        forget_agent(target.episodic(), agent_id)
    write_rows(target.episodic(), mine)
    return mine.count


def _write_runs(
    target: Side, agent_id: str, runs: list[DreamRun], present: list[DreamRun], mode: Mode
) -> int:
    """Record the source's runs the destination lacks (an undo is carried over); with
    ``replace`` the destination's own runs go first, so the history is the source's."""
    if not runs and not (mode == "replace" and present):
        return 0
    log = target.audit()
    there = {run.run_id: run for run in present}
    if mode == "replace" and set(there) - {run.run_id for run in runs}:
        target.forget_runs(agent_id)
        there = {}
    copied = 0
    for run in runs:
        held = there.get(run.run_id)
        if held is None:
            log.record(run)
            copied += 1
        elif run.undone_at is not None and held.undone_at is None:
            log.mark_undone(agent_id, run.run_id, run.undone_at)
    return copied


def _mark_moved(root: Path, names: list[str], url: str | None, when: str) -> None:
    """Say, beside the markdown files an in-place export left behind, that they are stale."""
    listed = "\n".join(f"  {name}" for name in sorted(names))
    text = (
        f"On {when} markus-memory exported this agent's markdown documents to PostgreSQL\n"
        f"({_redacted(url)}). From then on, with MARKUS_DATABASE_URL set, they are read\n"
        "and written there, not here. These files were left as they were at the export, as a\n"
        "backup; they are no longer updated, and without the URL they are read but never\n"
        "written:\n"
        f"{listed}\n"
        "Delete them once you no longer need the backup. Importing the agent back to files\n"
        "(markus-memory import --from-database-url URL --replace) replaces them and removes\n"
        "this note. The sessions and daily logs here were copied into the database too, and\n"
        "are a backup like the documents.\n"
    )
    atomic_write_bytes(root / MOVED_MARKER, text.encode("utf-8"))


def _redacted(url: str | None) -> str:
    if not url:
        return "PostgreSQL"
    scheme, sep, rest = url.partition("://")
    credentials, at, place = rest.rpartition("@")
    if not at:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}@{place}"


__all__ = ["Copied", "Mode", "copy_agent", "loses", "plain_files"]
