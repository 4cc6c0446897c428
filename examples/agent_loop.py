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
from collections.abc import Sequence

from markus_memory import AgentMemory, open_agent
from markus_memory.errors import LLMError
from markus_memory.flush import FlushTracker
from markus_memory.llm import ChatModel, OpenAIChatModel
from markus_memory.prompt import render_memory_context
from markus_memory.tokens import default_estimator
from markus_memory.tools import dispatch, tool_schemas

BASE_PROMPT = (
    "You are a helpful assistant with a persistent memory. Save durable facts with "
    "memory_save, keep your working state in the notebook with update_notebook, and look "
    "things up with memory_search before saying you do not know."
)


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
    # persist_recall: keep this turn's recall in NOTEBOOK.md as well, as the original runtime
    # did (a render without it changes no file)
    context = render_memory_context(memory, "converse", query=user_text, persist_recall=True)
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
        assistant = response.as_message()
        memory.sessions.append(session_id, assistant)
        if not response.tool_calls:
            break
        for call in response.tool_calls:
            result = dispatch(memory, call.name, call.arguments)
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
    model = OpenAIChatModel(
        args.model, base_url=args.base_url, api_key=os.environ.get("OPENAI_API_KEY")
    )
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
    except LLMError as exc:  # the memory is consistent: every write was already durable
        print(f"model error: {exc}", file=sys.stderr)
        return 1
    finally:
        model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
