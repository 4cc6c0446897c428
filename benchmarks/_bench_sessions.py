"""Framework session adapters against the frameworks' own stores, for bench_integrations.py.

Each function returns rows of ``(case, median ms, ratio to the baseline)``, the baseline being
the framework's own store on the same data in the same process:

- :func:`openai_agents_rows`: OpenAI Agents ``MarkusSession`` vs the SDK's ``SQLiteSession``
  (a file database): adding 1,000 items (one batch, and one call per item), and ``get_items``
  of a 10,000-item session (all of them, and the newest 20);
- :func:`pydantic_ai_rows`: PydanticAI ``MarkusConversationStore.load`` vs the framework's
  ``InMemoryConversationStore`` at 500 and 5,000 messages (the store is linear when the 5,000
  figure is about ten times the 500 one).

``database_url`` None runs Markus on SQLite (a temporary home), else on that PostgreSQL; each
run uses a fresh agent and deletes what it wrote.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from markus_memory import AgentMemory, Settings, open_agent

sys.path.insert(0, str(Path(__file__).parent))

from _common import median_ms  # noqa: E402

Row = tuple[str, float, float]


@contextmanager
def _agent(database_url: str | None) -> Iterator[tuple[AgentMemory, Path]]:
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        settings = Settings(home=Path(tmp), database_url=database_url, embedder="none")
        with open_agent(f"bench-{uuid.uuid4().hex[:10]}", settings=settings) as memory:
            try:
                yield memory, Path(tmp)
            finally:
                for info in memory.histories.list():
                    memory.histories.delete(info.key)


def _pair(case: str, ours: float, theirs: float, baseline: str) -> list[Row]:
    return [(f"{case} — {baseline}", theirs, 1.0), (f"{case} — Markus", ours, ours / theirs)]


def _items(n: int, start: int = 0) -> list[Any]:
    """A tool-using conversation: a question, a call, its output, an answer, repeated."""
    out: list[Any] = []
    for i in range(start, start + n):
        if i % 4 == 0:
            out.append({"role": "user", "content": f"question {i} about the billing service"})
        elif i % 4 == 1:
            out.append(
                {
                    "type": "function_call",
                    "name": "look",
                    "arguments": '{"q": 1}',
                    "call_id": f"c{i}",
                }
            )
        elif i % 4 == 2:
            output = f"result {i}: " + "row, " * 60
            out.append({"type": "function_call_output", "call_id": f"c{i - 1}", "output": output})
        else:
            text = [{"type": "output_text", "text": f"answer {i}", "annotations": []}]
            out.append({"type": "message", "role": "assistant", "content": text, "id": f"m{i}"})
    return out


def openai_agents_rows(
    database_url: str | None = None, *, add: int = 1_000, depth: int = 10_000, rounds: int = 5
) -> list[Row]:
    """``MarkusSession`` vs ``SQLiteSession``: add ``add`` items, read a ``depth``-item session."""
    from agents import SQLiteSession

    from markus_memory.integrations.openai_agents import MarkusSession

    batch, deep = _items(add), _items(depth)
    names = (f"s{n}" for n in itertools.count())
    rows: list[Row] = []
    with _agent(database_url) as (memory, tmp):

        def ours(action: Callable[[Any], Any]) -> float:
            return median_ms(
                lambda: asyncio.run(action(MarkusSession(next(names), memory))), rounds
            )

        def theirs(action: Callable[[Any], Any]) -> float:
            return median_ms(
                lambda: asyncio.run(action(SQLiteSession(next(names), db_path=tmp / "sdk.db"))),
                rounds,
            )

        async def one_batch(session: Any) -> None:
            await session.add_items(batch)

        async def one_by_one(session: Any) -> None:
            for item in batch:
                await session.add_items([item])

        rows += _pair(
            f"add {add:,} items, one batch", ours(one_batch), theirs(one_batch), "SQLiteSession"
        )
        rows += _pair(
            f"add {add:,} items, one call each",
            ours(one_by_one),
            theirs(one_by_one),
            "SQLiteSession",
        )
        markus = MarkusSession("deep", memory)
        sdk = SQLiteSession("deep", db_path=tmp / "sdk.db")
        for start in range(0, depth, 1_000):
            asyncio.run(markus.add_items(deep[start : start + 1_000]))
            asyncio.run(sdk.add_items(deep[start : start + 1_000]))
        for limit in (None, 20):
            case = f"get_items({'' if limit is None else f'limit={limit}'}) at {depth:,}"
            mine = median_ms(lambda n=limit: asyncio.run(markus.get_items(n)), rounds)
            base = median_ms(lambda n=limit: asyncio.run(sdk.get_items(n)), rounds)
            rows += _pair(case, mine, base, "SQLiteSession")
        sdk.close()
    return rows


def pydantic_ai_rows(
    database_url: str | None = None, *, sizes: tuple[int, ...] = (500, 5_000), rounds: int = 5
) -> list[Row]:
    """``MarkusConversationStore.load`` vs ``InMemoryConversationStore.load`` at each size."""
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.conversation_store import InMemoryConversationStore

    from markus_memory.integrations.pydantic_ai_store import MarkusConversationStore

    rows: list[Row] = []
    with _agent(database_url) as (memory, _):
        for size in sizes:
            messages = _messages(size)
            cid = f"load-{size}"
            baseline = InMemoryConversationStore()
            for store in (MarkusConversationStore(memory), baseline):
                asyncio.run(store.save(Conversation(conversation_id=cid, messages=list(messages))))
            # a fresh store each time: nothing of a previous load is remembered
            mine = median_ms(
                lambda c=cid: asyncio.run(MarkusConversationStore(memory).load(c)), rounds
            )
            base = median_ms(lambda c=cid, b=baseline: asyncio.run(b.load(c)), rounds)
            rows += _pair(
                f"PydanticAI load at {size:,} messages", mine, base, "InMemoryConversationStore"
            )
    return rows


def _messages(n: int) -> list[Any]:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = []
    for i in range(n):
        if i % 4 == 0:
            out.append(ModelRequest(parts=[UserPromptPart(f"question {i}")]))
        elif i % 4 == 1:
            out.append(ModelResponse(parts=[ToolCallPart("look", {"n": i}, tool_call_id=f"c{i}")]))
        elif i % 4 == 2:
            part = ToolReturnPart("look", f"found {i}: " + "row, " * 60, tool_call_id=f"c{i - 1}")
            out.append(ModelRequest(parts=[part]))
        else:
            out.append(ModelResponse(parts=[TextPart(f"answer {i}")]))
    return out


__all__ = ["Row", "openai_agents_rows", "pydantic_ai_rows"]
