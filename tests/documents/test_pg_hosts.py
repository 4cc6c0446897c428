"""Several processes acting as separate hosts share one agent through PostgreSQL.

Each host has its own home directory (sessions stay local) and its own connection pool; they
meet only in the database. No update may be lost and the caps must hold.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import re
from pathlib import Path
from typing import Any

import pytest

from markus_memory.config import Limits, Settings
from markus_memory.errors import BusyError
from markus_memory.memory import open_agent
from tests.postgres_support import new_agent_id, postgres_url

__all__ = ["postgres_url"]

pytestmark = pytest.mark.slow

HOSTS = 4
ROUNDS = 20


def _settings(home: Path, url: str, **limits: int) -> Settings:
    return Settings(home=home, database_url=url, limits=dataclasses.replace(Limits(), **limits))


def _host(host: int, home: str, url: str, agent: str, capped: str, start: Any) -> None:
    """One host: notebook, knowledge, state and a locked counter, ROUNDS times each."""
    start.wait(60)
    with (
        open_agent(agent, settings=_settings(Path(home), url)) as mem,
        open_agent(capped, settings=_settings(Path(home), url, max_observations=30)) as small,
    ):
        for i in range(ROUNDS):
            mem.knowledge.save_observation(f"host {host} save {i}", tags=[f"h{host}"])
            small.knowledge.save_observation(f"host {host} save {i}", tags=[f"h{host}"])
            mem.notebook.upsert(f"h{host}-k{i}", f"agent note {i}")
            mem.notebook.upsert(f"sys-h{host}", f"round {i}", managed="system")
            if i % 5 == 4:
                mem.knowledge.update_section(f"host {host}", f"round {i}")
                mem.state.update(f"host {host}", f"round {i}")
            with mem.documents.lock():  # a read-modify-write across two layers' documents
                entry = mem.state.get("counter")
                mem.state.update("counter", str(int(entry.content) + 1 if entry else 1))


def test_hosts_lose_no_update_and_keep_the_caps(postgres_url: str, tmp_path: Path) -> None:
    agent, capped = new_agent_id(), new_agent_id()
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [
        ctx.Process(
            target=_host, args=(h, str(tmp_path / f"host{h}"), postgres_url, agent, capped, start)
        )
        for h in range(HOSTS)
    ]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(120)
    assert [p.exitcode for p in procs] == [0] * HOSTS

    with open_agent(agent, settings=_settings(tmp_path / "reader", postgres_url)) as mem:
        saved = {o.content for o in mem.knowledge.observations()}
        assert saved == {f"host {h} save {i}" for h in range(HOSTS) for i in range(ROUNDS)}
        assert [mem.knowledge.section(f"host {h}") for h in range(HOSTS)] == [
            f"round {ROUNDS - 1}"
        ] * HOSTS
        entries = mem.notebook.entries()
        assert {e.key: e.text for e in entries if e.managed == "system"} == {
            f"sys-h{h}": f"round {ROUNDS - 1}" for h in range(HOSTS)
        }
        assert (
            len([e for e in entries if e.managed == "agent"]) == Limits().notebook_max_agent_entries
        )
        assert mem.state.get("counter").content == str(HOSTS * ROUNDS)  # type: ignore[union-attr]
        assert {mem.state.get(f"host {h}").content for h in range(HOSTS)} == {  # type: ignore[union-attr]
            f"round {ROUNDS - 1}"
        }
        assert not (tmp_path / "reader" / "agents" / agent / "knowledge.md").exists()

    with open_agent(capped, settings=_settings(tmp_path / "reader", postgres_url)) as small:
        kept = small.knowledge.observations()
        assert len(kept) == 30
        for h in range(HOSTS):  # per host, the buffer keeps a suffix of its saves, in order
            rounds = [
                int(m.group(1))
                for o in kept
                if (m := re.fullmatch(rf"host {h} save (\d+)", o.content))
            ]
            assert rounds == list(range(ROUNDS - len(rounds), ROUNDS))


def _try_dream(url: str, agent: str, home: str, answer: Any) -> None:
    with open_agent(agent, settings=_settings(Path(home), url)) as mem:
        try:
            with mem.documents.exclusive("dream"):
                answer.put("ran")
        except BusyError as exc:
            answer.put(f"busy: {exc}")


def test_one_dream_per_agent_across_hosts(postgres_url: str, tmp_path: Path) -> None:
    agent = new_agent_id()
    ctx = multiprocessing.get_context("spawn")
    answer = ctx.Queue()
    with open_agent(agent, settings=_settings(tmp_path / "a", postgres_url)) as mem:
        with mem.documents.exclusive("dream"):
            other = ctx.Process(
                target=_try_dream, args=(postgres_url, agent, str(tmp_path / "b"), answer)
            )
            other.start()
            other.join(60)
            assert answer.get(timeout=5).startswith("busy: dream is already running")
    later = ctx.Process(target=_try_dream, args=(postgres_url, agent, str(tmp_path / "b"), answer))
    later.start()
    later.join(60)
    assert answer.get(timeout=5) == "ran"
