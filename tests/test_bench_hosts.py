"""``benchmarks/bench_hosts.py`` for a few seconds with two hosts: its checker reads what the
hosts wrote (a write deleted behind its back is reported lost; nothing else is)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from benchmarks import bench_hosts
from benchmarks._hosts_ops import private_agent

from markus_memory import open_agent
from tests.postgres_support import URL_ENV

pytestmark = pytest.mark.slow


def test_the_checker_reports_a_write_deleted_behind_its_back(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    url = os.environ.get(URL_ENV)
    if not url:
        pytest.skip(f"{URL_ENV} is not set")
    deleted: list[str] = []

    def delete_notebooks(schema: str) -> None:
        config = bench_hosts.settings(tmp_path / "saboteur", schema)
        for host in range(2):
            with open_agent(private_agent(host, host), settings=config) as mem:
                for entry in mem.notebook.entries():
                    mem.notebook.clear(entry.key)
                    deleted.append(f"{mem.agent_id}/{entry.key}")

    result = bench_hosts.run_once(url, 2, 2, 4.0, before_check=delete_notebooks)
    check = result["check"]
    assert deleted, "no notebook write to delete: the run wrote nothing"
    assert check["notebook"]["lost"] == len(deleted)
    assert not check["notebook"]["ok"]
    for op in ("observe", "state", "activity"):
        assert check[op]["acked"] > 0, op
        assert check[op]["ok"], (op, check[op])
    assert result["views"]["documents"]  # the hosts and the checker read the shared agents alike
    cpu = result["cpu"]  # where the run's CPU went: the hosts' and PostgreSQL's processes
    assert cpu["hosts"] > 0 and cpu["postgres"] > 0
    assert cpu["hosts"] + cpu["postgres"] <= cpu["cores"] * 1.05
