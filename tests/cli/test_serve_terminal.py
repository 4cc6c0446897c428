"""markus-memory serve on a terminal says, on stderr, that it waits for an MCP client."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

SERVE = "from markus_memory.cli import main; main()"


def _first_stderr_line(stdin: int | None, home: Path) -> bytes:
    env = {**os.environ, "MARKUS_HOME": str(home)}
    with subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--agent", "tty"],
        stdin=stdin if stdin is not None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as proc:
        assert proc.stderr is not None
        try:
            ready, _, _ = select.select([proc.stderr], [], [], 30)
            return proc.stderr.readline() if ready else b""
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_item23_serve_on_a_terminal_says_it_waits_for_an_mcp_client(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    try:
        line = _first_stderr_line(slave, tmp_path)
    finally:
        os.close(slave)
        os.close(master)
    text = line.decode()
    assert "MCP client" in text and "stdin" in text and text.endswith("\n")


def test_serve_on_a_pipe_prints_no_terminal_hint(tmp_path: Path) -> None:
    env = {**os.environ, "MARKUS_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", SERVE, "serve", "--agent", "tty"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert b"MCP client" not in done.stderr
