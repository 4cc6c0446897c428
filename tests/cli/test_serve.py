"""markus-memory serve: refuses an unsafe binding; serves HTTP with a token end to end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import Invoke

pytest.importorskip("mcp")


def test_serving_beyond_loopback_without_a_token_is_refused(invoke: Invoke) -> None:
    result = invoke("serve", "--http", "--host", "0.0.0.0", code=2)
    assert "bearer token" in result.output
    assert "Traceback" not in result.output


def test_an_empty_token_is_refused(invoke: Invoke) -> None:
    result = invoke("serve", "--http", "--host", "0.0.0.0", "--token", " ", code=2)
    assert "empty" in result.output


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.slow
def test_serve_http_with_a_token_from_the_environment(tmp_path: Path) -> None:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    port, token = free_port(), "env-token-123"
    script = Path(sys.executable).parent / "markus-memory"
    env = {**os.environ, "MARKUS_HOME": str(tmp_path / "home"), "MARKUS_MCP_TOKEN": token}
    server = subprocess.Popen(
        [str(script), "serve", "-a", "web", "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(300):
            try:
                refused = httpx2.post(url, json={})
                break
            except httpx2.TransportError:
                time.sleep(0.05)
        else:
            pytest.fail("the server did not start")

        async def call() -> Any:
            headers = {"Authorization": f"Bearer {token}"}
            async with create_mcp_http_client(headers=headers) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    return await client.call_tool("state_update", {"key": "k", "content": "v"})

        result = anyio.run(call)
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=10)
    assert refused.status_code == 401, stderr
    assert b"Traceback" not in stderr
    assert not result.is_error
    assert "v" in (tmp_path / "home" / "agents" / "web" / "state.md").read_text()
