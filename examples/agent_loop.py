"""A small, real agent loop with markus-memory against any OpenAI-compatible chat API.

Each turn: flush preflight (save what matters before the context is compacted) → memory
blocks for the system prompt (knowledge, notebook, automatic recall) → the model, with the
memory tools → tool calls through ``dispatch`` → the transcript into ``sessions/``.

    pip install 'markus-memory[llm]'
    python examples/agent_loop.py --base-url http://localhost:8000/v1 --model my-model \\
        --agent alice "Remember that I prefer tea" "What do I prefer?"

Environment: ``OPENAI_API_KEY`` (optional), ``MARKUS_HOME`` (where memory lives).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from markus_memory import AgentMemory, open_agent
from markus_memory.flush import FlushTracker
from markus_memory.llm import ChatModel, ChatResponse, Message, ToolCall, ToolSchema
from markus_memory.prompt import render_memory_context
from markus_memory.tokens import default_estimator
from markus_memory.tools import dispatch, tool_schemas

BASE_PROMPT = (
    "You are a helpful assistant with a persistent memory. Save durable facts with "
    "memory_save, keep your working state in the notebook with update_notebook, and look "
    "things up with memory_search before saying you do not know."
)


class OpenAICompatibleChat:
    """ChatModel over ``POST {base_url}/chat/completions`` (OpenAI function calling)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers)
        self.model = model

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        timeout: float | None = None,
    ) -> ChatResponse:
        body: dict[str, Any] = {"model": self.model, "messages": [_wire(m) for m in messages]}
        if tools:
            body["tools"] = list(tools)
        reply = self._client.post("/chat/completions", json=body, timeout=timeout or 60.0)
        reply.raise_for_status()
        message = reply.json()["choices"][0]["message"]
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], _arguments(c["function"].get("arguments")))
            for c in message.get("tool_calls") or ()
        )
        return ChatResponse(message.get("content") or "", calls)

    def close(self) -> None:
        self._client.close()


def _arguments(raw: Any) -> Mapping[str, Any]:
    """Tool-call arguments as a dict; text that is not a JSON object is passed on as-is so
    that ``dispatch`` can tell the model how to call the tool correctly."""
    if isinstance(raw, Mapping):
        return raw
    try:
        parsed = json.loads(raw or "{}")
    except ValueError:
        return {"__raw__": raw}
    return parsed if isinstance(parsed, dict) else {"__raw__": parsed}


def _wire(message: Message) -> dict[str, Any]:
    """A Markus LLMMessage in OpenAI wire form."""
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("toolCalls"):
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in message["toolCalls"]
        ]
    if message.get("toolCallId"):
        out["tool_call_id"] = message["toolCallId"]
    return out


def _call_arguments(call: ToolCall) -> Any:
    raw = call.arguments.get("__raw__") if isinstance(call.arguments, Mapping) else None
    return raw if raw is not None else call.arguments


def chat_turn(
    memory: AgentMemory,
    model: ChatModel,
    session_id: str,
    user_text: str,
    *,
    tracker: FlushTracker,
    context_window: int = 32_000,
    max_tool_rounds: int = 6,
) -> str:
    """One user turn: flush if needed, build the prompt, run the model and its tool calls."""
    tracker.maybe_flush(memory, model, session_id)
    context = render_memory_context(memory, "converse", query=user_text)
    system = f"{BASE_PROMPT}\n\n{context.text}".strip()
    memory.sessions.get_or_create(session_id)
    memory.sessions.append(session_id, {"role": "user", "content": user_text})
    tools = tool_schemas("openai", scenario="converse")
    reply = ""
    for _ in range(max_tool_rounds):
        session = memory.sessions.get(session_id)
        history = list(session.messages) if session else []
        response = model.complete([{"role": "system", "content": system}, *history], tools=tools)
        reply = response.text
        assistant: dict[str, Any] = {"role": "assistant", "content": response.text}
        if response.tool_calls:
            assistant["toolCalls"] = [
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                for c in response.tool_calls
            ]
        memory.sessions.append(session_id, assistant)
        if not response.tool_calls:
            break
        for call in response.tool_calls:
            result = dispatch(memory, call.name, _call_arguments(call))
            memory.sessions.append(
                session_id, {"role": "tool", "content": result, "toolCallId": call.id}
            )
    session = memory.sessions.get(session_id)
    transcript = json.dumps(list(session.messages) if session else [], ensure_ascii=False)
    used = default_estimator().count(system) + default_estimator().count(transcript)
    tracker.record_usage(session_id, round(100 * used / context_window, 1))
    return reply


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("messages", nargs="+", help="user messages, one turn each")
    parser.add_argument("--base-url", required=True, help="e.g. http://localhost:8000/v1")
    parser.add_argument("--model", required=True)
    parser.add_argument("--agent", default="demo")
    parser.add_argument("--session", default="chat_demo")
    parser.add_argument("--home", default=None, help="memory home (default $MARKUS_HOME)")
    parser.add_argument("--context-window", type=int, default=32_000)
    args = parser.parse_args(argv)
    model = OpenAICompatibleChat(args.base_url, args.model, os.environ.get("OPENAI_API_KEY"))
    tracker = FlushTracker()
    try:
        with open_agent(args.agent, home=args.home) as memory:
            for text in args.messages:
                reply = chat_turn(
                    memory,
                    model,
                    args.session,
                    text,
                    tracker=tracker,
                    context_window=args.context_window,
                )
                print(f"> {text}\n{reply}\n")
    finally:
        model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
