"""Issue 12, item 12: the HTTP servers' guard (token, Host/Origin, bearer scheme) and
``markus-memory serve`` flags. Real uvicorn on real sockets, the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402
import uvicorn  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from markus_memory import AgentMemory, InvalidInputError, open_agent  # noqa: E402
from markus_memory.cli import cli  # noqa: E402
from markus_memory.mcp_server import check_http_binding, http_app  # noqa: E402

TOKEN = "a-long-random-token-for-tests"
SAVE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "memory_save", "arguments": {"content": "written over http"}},
}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    with open_agent("alice", tmp_path / "home") as mem:
        yield mem


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running(app: Any, host: str) -> Iterator[int]:
    port = free_port(host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx2.Response:
    return httpx2.post(
        url, json=body, headers={"Accept": "application/json, text/event-stream", **headers}
    )


def initialize(url: str, headers: dict[str, str]) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    return post(url, body, headers)


def test_item12_a_loopback_alias_needs_a_token() -> None:
    for host in ("127.0.0.2", "127.1.2.3", "0.0.0.0", "::ffff:127.0.0.1"):
        with pytest.raises(InvalidInputError, match="token"):
            check_http_binding(host, None)
    for host in ("127.0.0.1", "localhost", "::1", "[::1]"):
        check_http_binding(host, None)


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1"])
def test_item12_a_foreign_host_header_is_refused_on_every_bind(
    memory: AgentMemory, host: str
) -> None:
    token = TOKEN if host != "127.0.0.1" else None
    auth = {"Authorization": f"Bearer {TOKEN}"} if token else {}
    with running(http_app(memory, host=host, token=token), host) as port:
        url = f"http://{host}:{port}/mcp"
        rebound = post(url, SAVE, {**auth, "Host": "attacker.example"})
        rebound_with_port = post(url, SAVE, {**auth, "Host": f"attacker.example:{port}"})
        fine = initialize(url, auth)
    assert rebound.status_code == rebound_with_port.status_code == 421
    assert "attacker.example" in rebound.json()["error"]
    assert fine.status_code == 200
    assert memory.knowledge.observations() == []


def test_item12_a_foreign_origin_is_refused(memory: AgentMemory) -> None:
    with running(http_app(memory), "127.0.0.1") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        foreign = post(url, SAVE, {"Origin": "https://attacker.example"})
        null = post(url, SAVE, {"Origin": "null"})
        cross = post(url, SAVE, {"Sec-Fetch-Site": "cross-site"})
        own = initialize(url, {"Origin": f"http://localhost:{port}"})
    assert foreign.status_code == null.status_code == cross.status_code == 403
    assert own.status_code == 200
    assert memory.knowledge.observations() == []


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer", "bEaReR"])
def test_item12_the_bearer_scheme_is_case_insensitive(memory: AgentMemory, scheme: str) -> None:
    with running(http_app(memory, token=TOKEN), "127.0.0.1") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        accepted = initialize(url, {"Authorization": f"{scheme} {TOKEN}"})
        wrong = initialize(url, {"Authorization": f"{scheme} not-the-token"})
        other = initialize(url, {"Authorization": f"Basic {TOKEN}"})
    assert accepted.status_code == 200
    assert wrong.status_code == other.status_code == 401


@pytest.mark.parametrize(
    "args",
    [["--token", "abc"], ["--port", "9999"], ["--host", "0.0.0.0"]],
    ids=["token", "port", "host"],
)
def test_item12_http_flags_without_http_are_refused(args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["serve", *args])
    assert result.exit_code == 2
    assert "--http" in result.output and "Traceback" not in result.output


def test_item12_a_token_in_the_environment_does_not_break_stdio(tmp_path: Path) -> None:
    script = shutil.which("markus-memory", path=str(Path(sys.executable).parent))
    assert script is not None
    env = {**os.environ, "MARKUS_HOME": str(tmp_path / "h"), "MARKUS_MCP_TOKEN": "t0ken"}
    done = subprocess.run(
        [script, "serve"], input="", capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_item12_a_port_in_use_is_one_clear_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            cli, ["--home", str(tmp_path / "h"), "serve", "--http", "--port", str(port)]
        )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == [f"Error: port {port} on 127.0.0.1 is already in use; pick another with --port"]


@pytest.mark.slow
def test_item12_serve_on_bracketed_ipv6_loopback_works(tmp_path: Path) -> None:
    script = shutil.which("markus-memory", path=str(Path(sys.executable).parent))
    assert script is not None
    env = {**os.environ, "MARKUS_HOME": str(tmp_path / "h")}
    command = [script, "serve", "--http", "--host", "[::1]", "--port", str(free_port("::1"))]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline().strip()
        assert banner.startswith("MCP over HTTP: http://[::1]:"), banner
        url = banner.split(": ", 1)[1]
        for _ in range(200):
            try:
                answer = initialize(url, {})
                break
            except httpx2.ConnectError:
                time.sleep(0.05)
        assert answer.status_code == 200
        assert "markus-memory" in json.dumps(answer.text)
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr is not None:
            proc.stderr.close()


def test_issue28_only_the_servers_own_origin_may_post(memory: AgentMemory) -> None:
    with running(http_app(memory), "127.0.0.1") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        other = port + 1 if port < 65535 else port - 1
        refused = [
            post(url, SAVE, {"Origin": f"http://127.0.0.1:{other}"}),
            post(url, SAVE, {"Origin": f"http://localhost:{other}"}),
            post(url, SAVE, {"Origin": f"https://127.0.0.1:{port}"}),
            post(url, SAVE, {"Origin": "http://127.0.0.1"}),
            post(url, SAVE, {"Referer": f"http://localhost:{other}/notebook"}),
            post(url, SAVE, {"Sec-Fetch-Site": "same-site"}),
        ]
        own = initialize(url, {"Origin": f"http://127.0.0.1:{port}"})
        own_referer = initialize(url, {"Referer": f"http://localhost:{port}/x"})
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert "only pages of this server" in refused[0].json()["error"]
    assert own.status_code == own_referer.status_code == 200
    assert memory.knowledge.observations() == []
