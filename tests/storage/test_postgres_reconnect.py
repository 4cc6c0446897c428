"""Connections cut under load (a TCP proxy resetting them mid-transaction): every write either
returned and is stored, or raised to its caller; none is stored twice; the process reconnects
by itself."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from benchmarks._tcp_proxy import TcpProxy, proxy

from markus_memory import AgentMemory, MarkusMemoryError, Settings, open_agent
from tests.postgres_support import new_agent_id, postgres_url

__all__ = ["postgres_url"]

WORKERS = 4
WRITES = 25


def _saves(mem: AgentMemory, worker: int) -> tuple[list[str], list[str]]:
    """Observations saved one by one: (acknowledged, failed) contents."""
    acked: list[str] = []
    failed: list[str] = []
    for n in range(WRITES):
        content = f"worker {worker} fact {n}"
        try:
            mem.knowledge.save_observation(content)
        except MarkusMemoryError:
            failed.append(content)
        else:
            acked.append(content)
    return acked, failed


def test_cut_connections_lose_no_acknowledged_write_and_double_none(
    postgres_url: str, tmp_path: Path
) -> None:
    agent = new_agent_id()
    results: list[tuple[list[str], list[str]]] = [([], [])] * WORKERS
    with proxy() as cutter:
        url = cutter.url(postgres_url)
        hosts = [
            open_agent(agent, settings=Settings(home=tmp_path / f"host{w}", database_url=url))
            for w in range(WORKERS)
        ]

        def work(worker: int) -> None:
            results[worker] = _saves(hosts[worker], worker)

        cutter.chaos(0.15, seed=7)
        threads = [threading.Thread(target=work, args=(w,)) for w in range(WORKERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        cutter.calm()
        for mem in hosts:
            mem.close()
        cuts = cutter.cuts
    acked = [c for ok, _ in results for c in ok]
    failed = [c for _, bad in results for c in bad]
    assert cuts > 0
    assert len(acked) + len(failed) == WORKERS * WRITES
    assert failed, "no write met a cut connection: the test proved nothing"
    assert acked, "no write got through: the test proved nothing"
    checker = Settings(home=tmp_path / "checker", database_url=postgres_url)
    with open_agent(agent, settings=checker) as mem:
        stored = [o.content for o in mem.knowledge.observations()]
    assert sorted(set(acked) - set(stored)) == []
    assert len(stored) == len(set(stored))
    assert set(stored) <= set(acked) | set(failed)


def test_a_handle_reconnects_by_itself_after_its_connections_were_cut(
    postgres_url: str, tmp_path: Path
) -> None:
    agent = new_agent_id()
    cutter = TcpProxy()
    try:
        settings = Settings(home=tmp_path / "host", database_url=cutter.url(postgres_url))
        with open_agent(agent, settings=settings) as mem:
            mem.notebook.upsert("before", "written before the cut")
            assert cutter.connections > 0
            cutter.refuse()
            with pytest.raises(MarkusMemoryError):
                mem.notebook.upsert("during", "the server is gone")
            cutter.accept()
            mem.notebook.upsert("after", "written after the cut")
            keys = [e.key for e in mem.notebook.entries()]
    finally:
        cutter.close()
    assert "before" in keys and "after" in keys and "during" not in keys
