"""What the MCP layer costs per tool call, and what the CLI costs to start.

    python benchmarks/bench_mcp.py            # 300 calls per tool and path
    python benchmarks/bench_mcp.py --n 1000

Per tool (memory_save, memory_search, update_notebook) it times the same call made directly
through ``tools.dispatch`` (the baseline) and through the SDK's in-process client against
``mcp_server.build_server`` (JSON-RPC objects, validation, the worker-thread hop), in the same
process on the same memory, and prints the medians and their ratio. Then it times
``markus-memory --help`` and a ``markus-memory serve`` stdio round trip as subprocesses.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from markus_memory import open_agent
from markus_memory.mcp_server import build_server
from markus_memory.tools import dispatch

CALLS: dict[str, Any] = {
    "memory_save": lambda i: {"content": f"observation number {i} about deploys and tea"},
    "memory_search": lambda i: {"query": "deploys tea", "limit": 5},
    "update_notebook": lambda i: {"key": f"k{i % 3}", "content": f"working note {i}"},
}


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_calls(n: int, home: Path) -> None:
    with open_agent("bench", home=home) as mem:
        for i in range(200):
            dispatch(mem, "memory_save", {"content": f"seed observation {i} on deploy windows"})
        server = build_server(mem)

        async def through_mcp() -> dict[str, list[float]]:
            times: dict[str, list[float]] = {name: [] for name in CALLS}
            async with Client(server) as client:
                for name, args in CALLS.items():
                    for i in range(n):
                        start = time.perf_counter()
                        await client.call_tool(name, args(i))
                        times[name].append(time.perf_counter() - start)
            return times

        direct: dict[str, list[float]] = {name: [] for name in CALLS}
        for name, args in CALLS.items():
            for i in range(n):
                start = time.perf_counter()
                dispatch(mem, name, args(i))
                direct[name].append(time.perf_counter() - start)
        mcp = anyio.run(through_mcp)
    print(f"{'tool':<16} {'dispatch ms':>12} {'mcp ms':>8} {'ratio':>6}")
    for name in CALLS:
        base, via = median_ms(direct[name]), median_ms(mcp[name])
        print(f"{name:<16} {base:>12.3f} {via:>8.3f} {via / base:>6.2f}")


def seed_transcript(home: Path) -> None:
    """300 turns in 30 sessions for the recall round trips, with their MiniLM vectors when the
    ``[semantic]`` extra is installed (so a server's recall embeds only its question)."""
    from markus_memory.search.embedders import configured_embedder

    with open_agent("bench", home=home, embedder=configured_embedder("auto")) as mem:
        for n in range(300):
            session = mem.sessions.get_or_create(f"chat_{n // 10}")
            text = f"turn {n}: we talked about the launch date, the budget and item {n}"
            mem.sessions.append(session.id, {"role": "user", "content": text})
        mem.catch_up_transcripts()


def bench_processes(runs: int, home: Path) -> None:
    seed_transcript(home)
    script = str(Path(sys.executable).parent / "markus-memory")
    env = {**os.environ, "MARKUS_HOME": str(home)}
    helps = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([script, "--help"], env=env, check=True, capture_output=True)
        helps.append(time.perf_counter() - start)
    print(f"markus-memory --help: median {median_ms(helps):.0f} ms")

    async def round_trip() -> None:
        params = StdioServerParameters(command=script, args=["serve", "-a", "bench"], env=env)
        async with Client(params) as client:
            await client.call_tool("memory_save", {"content": "one round trip"})

    trips = []
    for _ in range(runs):
        start = time.perf_counter()
        anyio.run(round_trip)
        trips.append(time.perf_counter() - start)
    print(f"serve: start + one tool call + exit over stdio: median {median_ms(trips):.0f} ms")
    for choice in ("none", "minilm"):
        print(f"serve (MARKUS_EMBEDDER={choice}): {recall_trip(script, env, choice, runs)}")


def recall_trip(script: str, env: dict[str, str], choice: str, runs: int) -> str:
    """Start ``serve`` with the embedder ``choice``, recall once (the first: the model loads),
    then nine more; medians over ``runs`` processes."""
    firsts: list[float] = []
    laters: list[float] = []
    params = StdioServerParameters(
        command=script, args=["serve", "-a", "bench"], env={**env, "MARKUS_EMBEDDER": choice}
    )
    question = {"query": "what did we decide about the launch date?", "limit": 5}

    async def trip() -> None:
        async with Client(params) as client:
            start = time.perf_counter()
            await client.call_tool("recall_conversation", question)
            firsts.append(time.perf_counter() - start)
            for _ in range(9):
                start = time.perf_counter()
                await client.call_tool("recall_conversation", question)
                laters.append(time.perf_counter() - start)

    starts = []
    for _ in range(runs):
        start = time.perf_counter()
        anyio.run(trip)
        starts.append(time.perf_counter() - start - firsts[-1] - sum(laters[-9:]))
    return (
        f"start + exit {median_ms(starts):.0f} ms, first recall {median_ms(firsts):.1f} ms, "
        f"later recalls {median_ms(laters):.1f} ms (medians)"
    )


def main() -> None:
    os.environ.setdefault("MARKUS_EMBEDDER", "none")  # the tool-call figures are lexical
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="calls per tool and path")
    parser.add_argument("--runs", type=int, default=5, help="subprocess runs")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_calls(options.n, Path(tmp) / "calls")
        bench_processes(options.runs, Path(tmp) / "procs")


if __name__ == "__main__":
    main()
