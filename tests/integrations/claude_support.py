"""Claude Code transcripts as Claude Code writes them (JSONL under ~/.claude/projects), and the
hook commands run as Claude Code runs them: a process, the hook's JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid as uuids
from pathlib import Path
from typing import Any

PROJECT = "/home/ana/billing"
SESSION = "5f3c2a9e-8d7b-4c61-a0e2-93b1f4d6c7a8"
EVENTS = {"pre-compact": "PreCompact", "stop": "Stop", "session-end": "SessionEnd"}


def line(n: int, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    """Transcript line ``n``: a user turn (even) or an assistant turn (odd), with its uuid."""
    common = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": PROJECT,
        "sessionId": SESSION,
        "version": "2.1.3",
        "uuid": str(uuids.UUID(int=n + 1)),
        "timestamp": f"2026-11-30T09:{n // 3600 % 60:02d}:{n // 60 % 60:02d}.{n % 60:03d}Z",
    }
    if n % 2 == 0:
        message: dict[str, Any] = {"role": "user", "content": f"question {n} about invoices"}
        return {**common, "type": "user", "message": message, **extra}
    message = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": f"answer {n}: invoices go to Postgres"}],
    }
    return {**common, "type": "assistant", "message": message, **extra}


def lines(count: int) -> list[dict[str, Any]]:
    return [line(n) for n in range(count)]


def write_transcript(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    """``rows`` one per line: objects as JSON, strings as written (for broken lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


def hook_json(event: str, transcript: Path | str, **extra: Any) -> str:
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": str(transcript),
            "cwd": PROJECT,
            "hook_event_name": event,
            **extra,
        }
    )


def run(args: list[str], stdin: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m markus_memory.cli ARGS`` with ``stdin``, memory home ``home``."""
    environ = {**os.environ, "MARKUS_HOME": str(home), "MARKUS_EMBEDDER": "none", **env}
    return subprocess.run(
        [sys.executable, "-m", "markus_memory.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environ,
        check=False,
        timeout=600,
    )


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (lock files left out: opening takes them)."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".lock"
    }
