"""LoCoMo recall through the MCP server (stdio, the SDK's client) against the library, same run.

Usage: python benchmarks/locomo_mcp.py PATH/locomo.json [--embedder none|minilm]
[--starts 6] [--out results.json]

Every conversation is recorded into an agent under a temporary home through the public API
exactly as ``locomo.py`` does (``_locomo_data.record``), and indexed (``catch_up_transcripts``,
with vectors when ``--embedder minilm``). Then, per conversation, the library
(``AgentMemory.recall_conversation``, the agent opened with ``Settings.from_env`` of the same
environment the server gets) and the real server (``markus-memory serve --agent ID`` as a
subprocess with that home and ``MARKUS_EMBEDDER``, reached with ``ClientSession`` over
``stdio_client``) are asked every question of categories 1-4 with the tool's own arguments
(``limit`` 10, ``neighbours`` 0). The server's hits (session id, index) are mapped back to the
turns' dia_ids. Printed: recall_any/all@10 of both side by side (overall and per
conversation), how many questions' top 10 differ between the two (hits, order or score), the
server's start (process start to ``initialize`` done; one per conversation and ``--starts``
more) beside a Python process that only imports the MCP SDK's server (the floor of any start,
timed in turn with them), its first recall, and the medians of a library recall and of an MCP
round trip, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from _locomo_data import LocomoConversation, ReplayClock, load, record  # noqa: E402
from _locomo_tables import Result, breakdown, format_breakdown  # noqa: E402
from markus_memory import open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402

DEPTH = 10
WARM_UP = "index warm-up"
Hit = tuple[str, int, float]
"""(session id, index in the session, score): what both doors return for one hit."""


@dataclass
class Answers:
    """One door's hits per question, in question order, and its timings in milliseconds."""

    hits: list[list[Hit]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    firsts: list[float] = field(default_factory=list)


def agent_id(conv: LocomoConversation) -> str:
    return f"locomo-mcp-{conv.sample_id}"


def tool_args(question: str) -> dict[str, Any]:
    return {"query": question, "limit": DEPTH, "neighbours": 0}


def server_env(home: Path, embedder: str) -> dict[str, str]:
    """The environment of the server and of the library's ``Settings.from_env``."""
    return {**os.environ, "MARKUS_HOME": str(home), "MARKUS_EMBEDDER": embedder}


def ingest(conversations: Sequence[LocomoConversation], home: Path, embedder: str) -> float:
    """Record and index every conversation as ``locomo.py`` does; the seconds it took."""
    started = time.perf_counter()
    for conv in conversations:
        clock = ReplayClock()
        settings = Settings(home=home, clock=clock, embedder=embedder)
        with open_agent(agent_id(conv), settings=settings) as mem:
            record(mem, conv, clock)
            mem.catch_up_transcripts()
    return time.perf_counter() - started


def ask_library(conv: LocomoConversation, env: dict[str, str]) -> Answers:
    out = Answers()
    settings = Settings.from_env(env)
    with open_agent(agent_id(conv), settings=settings) as mem:
        started = time.perf_counter()
        mem.recall_conversation(WARM_UP, limit=1)
        out.firsts.append((time.perf_counter() - started) * 1000)
        for question in conv.questions:
            args = tool_args(question.question)
            started = time.perf_counter()
            hits = mem.recall_conversation(args.pop("query").strip(), **args)
            out.latencies.append((time.perf_counter() - started) * 1000)
            out.hits.append([(h.session_id, h.index, h.score) for h in hits])
    return out


def markus_command() -> str:
    found = shutil.which("markus-memory", path=str(Path(sys.executable).parent))
    if found is None:
        raise SystemExit("the markus-memory console script is not installed next to python")
    return found


def _tool_hits(result: Any) -> list[Hit]:
    shown = json.loads(result.content[0].text)
    if result.is_error:
        raise RuntimeError(f"recall_conversation failed: {shown}")
    return [(r["sessionId"], r["index"], r["score"]) for r in shown["results"]]


def ask_server(conv: LocomoConversation, env: dict[str, str], *, questions: bool = True) -> Answers:
    """Start ``serve`` for the conversation's agent, recall once (the warm-up) and ask every
    question over stdio (none without ``questions``: a start and a first recall)."""
    out = Answers()
    params = StdioServerParameters(
        command=markus_command(), args=["serve", "--agent", agent_id(conv)], env=env
    )

    async def session() -> None:
        started = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            out.starts.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await client.call_tool("recall_conversation", {"query": WARM_UP, "limit": 1})
            out.firsts.append((time.perf_counter() - started) * 1000)
            for question in conv.questions if questions else ():
                started = time.perf_counter()
                result = await client.call_tool("recall_conversation", tool_args(question.question))
                out.latencies.append((time.perf_counter() - started) * 1000)
                out.hits.append(_tool_hits(result))

    anyio.run(session)
    return out


def sdk_import_ms(env: dict[str, str]) -> float:
    """The baseline of a start: a Python process that only imports the MCP SDK's server."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.stdio"], env=env, check=True)
    return (time.perf_counter() - started) * 1000


def scored(conv: LocomoConversation, answers: Answers) -> list[Result]:
    """The ``locomo.py`` rows: a hit is its turn's dia_id, found by session and index."""
    dia = {(f"session_{t.session}", t.position): t.dia_id for t in conv.turns}
    return [
        (conv.sample_id, q.category, [dia[(s, i)] for s, i, _ in hits], set(q.evidence))
        for q, hits in zip(conv.questions, answers.hits, strict=True)
    ]


def differing(library: Answers, server: Answers) -> tuple[int, int]:
    """(questions whose top 10 differ in turns or order, questions whose scores differ)."""
    pairs = list(zip(library.hits, server.hits, strict=True))
    turns = sum([(s, i) for s, i, _ in a] != [(s, i) for s, i, _ in b] for a, b in pairs)
    return turns, sum(a != b for a, b in pairs)


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3) if values else 0.0


def run(
    conversations: Sequence[LocomoConversation], home: Path, embedder: str, starts: int = 0
) -> dict[str, Any]:
    """Ingest, ask both doors, then ``starts`` more server starts (each with a first recall)
    alternating with the SDK-import baseline; the report (the rows are under ``rows``)."""
    report: dict[str, Any] = {"embedder": embedder, "load_before": load_average()}
    report["ingest_seconds"] = round(ingest(conversations, home, embedder), 3)
    env = server_env(home, embedder)
    library, server = Answers(), Answers()
    rows: dict[str, list[Result]] = {"library": [], "mcp": []}
    for conv in conversations:
        lib, srv = ask_library(conv, env), ask_server(conv, env)
        rows["library"] += scored(conv, lib)
        rows["mcp"] += scored(conv, srv)
        for mine, theirs in ((library, lib), (server, srv)):
            for name in ("hits", "latencies", "starts", "firsts"):
                getattr(mine, name).extend(getattr(theirs, name))
    baseline = []
    for _ in range(starts):
        baseline.append(sdk_import_ms(env))
        again = ask_server(conversations[0], env, questions=False)
        server.starts += again.starts
        server.firsts += again.firsts
    report["questions"] = len(library.hits)
    report["top10_differ"], report["scores_differ"] = differing(library, server)
    report["library_median_ms"] = median(library.latencies)
    report["mcp_median_ms"] = median(server.latencies)
    report["library_first_recall_median_ms"] = median(library.firsts)
    report["serve_start_median_ms"] = median(server.starts)
    report["serve_start_max_ms"] = round(max(server.starts), 3)
    report["serve_first_recall_median_ms"] = median(server.firsts)
    report["serve_starts"] = len(server.starts)
    report["sdk_import_median_ms"] = median(baseline)
    report["load_after"] = load_average()
    report["by_conversation"] = {
        name: {r[0]: [round(r[1], 4), round(r[2], 4), r[3]] for r in breakdown(results)}
        for name, results in rows.items()
    }
    report["rows"] = rows
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--embedder", choices=("none", "minilm"), default="none")
    parser.add_argument(
        "--starts", type=int, default=6, help="server starts beyond one per conversation"
    )
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args(argv)
    conversations = load(args.path)
    with tempfile.TemporaryDirectory() as tmp:
        report = run(conversations, Path(tmp) / "home", args.embedder, args.starts)
    print(format_breakdown(report.pop("rows")))
    lib, mcp = report["library_median_ms"], report["mcp_median_ms"]
    print(
        f"embedder {args.embedder}: {report['questions']} questions, top 10 differ in "
        f"{report['top10_differ']} (scores in {report['scores_differ']}); ingest "
        f"{report['ingest_seconds']} s\n"
        f"recall median: library {lib:.2f} ms, MCP round trip {mcp:.2f} ms "
        f"(x{mcp / lib:.2f}, +{mcp - lib:.2f} ms)\n"
        f"serve start (spawn to initialize done), {report['serve_starts']} starts: median "
        f"{report['serve_start_median_ms']:.0f} ms, max {report['serve_start_max_ms']:.0f} ms "
        f"(a python importing the MCP SDK's server: {report['sdk_import_median_ms']:.0f} ms); "
        f"first recall: server "
        f"{report['serve_first_recall_median_ms']:.0f} ms, library "
        f"{report['library_first_recall_median_ms']:.0f} ms (medians)\n"
        f"load average before {report['load_before']}, after {report['load_after']}"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
