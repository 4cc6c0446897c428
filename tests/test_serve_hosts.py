"""``markus-memory serve --http`` as one of several hosts: the health endpoint a load balancer
polls, and the drain on SIGTERM. Real uvicorn on real sockets, real PostgreSQL, the real CLI
in a subprocess."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402
from benchmarks._tcp_proxy import proxy  # noqa: E402

from markus_memory import AgentMemory, Settings, open_agent  # noqa: E402
from markus_memory.mcp_server import http_app  # noqa: E402
from tests.postgres_support import URL_ENV, new_agent_id, postgres_url, schema_url  # noqa: E402
from tests.test_http_security import SAVE, free_port, post, running  # noqa: E402

__all__ = ["postgres_url"]

TOKEN = "a-long-random-token-for-tests"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    with open_agent("alice", tmp_path / "home") as mem:
        yield mem


def healthz(port: int) -> httpx2.Response:
    return httpx2.get(f"http://127.0.0.1:{port}/healthz")


def test_healthz_answers_without_the_token_and_mcp_still_needs_it(memory: AgentMemory) -> None:
    with running(http_app(memory, token=TOKEN), "127.0.0.1") as port:
        health = healthz(port)
        head = httpx2.head(f"http://127.0.0.1:{port}/healthz")
        posted = httpx2.post(f"http://127.0.0.1:{port}/healthz")
        refused = post(f"http://127.0.0.1:{port}/mcp", SAVE, {})
        foreign = httpx2.get(
            f"http://127.0.0.1:{port}/healthz", headers={"Host": "attacker.example"}
        )
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "database": "local", "schema": "current"}
    assert head.status_code == 200 and head.content == b""
    assert posted.status_code == 405
    assert refused.status_code == 401
    assert foreign.status_code == 421
    assert memory.knowledge.observations() == []


def test_healthz_on_postgresql_reports_reachable_then_unreachable(
    postgres_url: str, tmp_path: Path
) -> None:
    with proxy() as cutter:
        url = cutter.url(postgres_url)
        settings = Settings(home=tmp_path / "host", database_url=url)
        with open_agent(new_agent_id(), settings=settings) as mem:
            with running(http_app(mem, token=TOKEN), "127.0.0.1") as port:
                up = healthz(port)
                cutter.refuse()
                down = healthz(port)
                cutter.accept()
                back = healthz(port)
    assert up.status_code == back.status_code == 200
    assert up.json() == {"status": "ok", "database": "reachable", "schema": "current"}
    assert down.status_code == 503
    body = down.json()
    assert body["status"] == "unavailable" and body["database"] == "unreachable"
    for secret in ("127.0.0.1", str(cutter.port), "postgres", "test"):
        assert secret not in body["reason"]


@pytest.fixture
def own_schema() -> Iterator[str]:
    """A URL on a schema of its own (this test changes the migration bookkeeping)."""
    psycopg = pytest.importorskip("psycopg")
    url = os.environ.get(URL_ENV)
    if not url:
        pytest.skip(f"{URL_ENV} is not set")
    schema = f"markus_health_{secrets.token_hex(5)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield schema_url(url, schema)
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_healthz_reports_a_schema_behind_as_503(own_schema: str, tmp_path: Path) -> None:
    import psycopg

    settings = Settings(home=tmp_path / "host", database_url=own_schema)
    with open_agent(new_agent_id(), settings=settings) as mem:
        mem.knowledge.save_observation("the schema is made")
        with running(http_app(mem), "127.0.0.1") as port:
            current = healthz(port)
            with psycopg.connect(own_schema, autocommit=True) as conn:
                conn.execute(
                    "DELETE FROM _markus_migrations WHERE migration_set = 'markus' AND name = "
                    "(SELECT max(name) FROM _markus_migrations WHERE migration_set = 'markus')"
                )
            behind = healthz(port)
    assert current.status_code == 200
    assert behind.status_code == 503
    assert behind.json()["schema"] == "behind"
    assert "doctor --fix" in behind.json()["reason"]


def _refused(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except OSError:
        return True


@pytest.mark.slow
def test_sigterm_finishes_the_call_in_flight_refuses_new_ones_and_exits_0(
    tmp_path: Path,
) -> None:
    script = shutil.which("markus-memory", path=str(Path(sys.executable).parent))
    assert script is not None
    home = tmp_path / "home"
    port = free_port()
    env = {**os.environ, "MARKUS_HOME": str(home)}
    command = [script, "serve", "--agent", "alice", "--http", "--port", str(port)]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    answers: list[httpx2.Response] = []
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("MCP over HTTP:")
        while healthz_or_none(port) is None:
            time.sleep(0.05)
        with open_agent("alice", home) as mem, mem.documents.lock():
            # The save below waits for the agent's lock, which this test holds: in flight.
            call = threading.Thread(
                target=lambda: answers.append(post(f"http://127.0.0.1:{port}/mcp", SAVE, {}))
            )
            call.start()
            time.sleep(1.5)  # the request reaches the server (not a timing assertion)
            proc.send_signal(signal.SIGTERM)
            while not _refused(port):
                time.sleep(0.05)
            assert proc.poll() is None, "the server exited with a call in flight"
        call.join(30)
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()
    assert code == 0
    assert len(answers) == 1 and answers[0].status_code == 200
    assert '"isError":false' in answers[0].text.replace(" ", "")
    with open_agent("alice", home) as mem:
        assert [o.content for o in mem.knowledge.observations()] == ["written over http"]


def healthz_or_none(port: int) -> Any:
    try:
        return healthz(port)
    except httpx2.TransportError:
        return None
