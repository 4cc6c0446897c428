"""PydanticAI: the memory tools as a toolset and the memory context as instructions.

:class:`MarkusMemory` is a capability: ``Agent(model, capabilities=[MarkusMemory(memory)])``
gives the agent the registry's tools (:class:`MemoryToolset`, usable on its own too) and, on
each request, the agent's memory context (knowledge, then the notebook) as instructions. Tool
calls run through ``dispatch``: a bad call comes back to the model as the registry's error
result, never as an exception. A conversation store over ``memory.sessions`` lives in
:mod:`markus_memory.integrations.pydantic_ai_store`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ExtraNotInstalledError
from ..prompt import PROFILES, render_memory_context
from ._tools import call, parameters, select_tools

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("pydantic-ai", exc.name or "pydantic_ai") from exc

if TYPE_CHECKING:
    from ..memory import AgentMemory

_RAW = "__markus_raw_arguments__"


class _AsSent:
    """The tools' argument validator: arguments reach ``dispatch`` as the model sent them.

    The registry validates them, so a malformed call (text that is not JSON, an array …) gets
    the same error result here as through every other host, not the framework's own retry text.
    """

    def validate_json(self, input: str | bytes | bytearray, **kwargs: Any) -> Any:
        try:
            decoded = json.loads(input or "{}")
        except (ValueError, RecursionError):
            return {
                _RAW: input if isinstance(input, str) else bytes(input).decode("utf-8", "replace")
            }
        return self.validate_python(decoded)

    def validate_python(self, input: Any, **kwargs: Any) -> Any:
        return input if isinstance(input, dict) and _RAW not in input else {_RAW: input}


class MemoryToolset(AbstractToolset[Any]):
    """The memory tools of ``memory`` (all canonical ones, a scenario's or ``names``)."""

    def __init__(
        self,
        memory: AgentMemory,
        *,
        scenario: str | None = None,
        names: Iterable[str] | None = None,
        id: str | None = "markus-memory",
    ) -> None:
        self.memory = memory
        self._tools = select_tools(scenario=scenario, names=names)
        self._id = id

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            tool.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=tool.name,
                    description=tool.description,
                    parameters_json_schema=parameters(tool),
                ),
                max_retries=1,
                args_validator=_AsSent(),
            )
            for tool in self._tools
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> str:
        arguments: Any = tool_args[_RAW] if set(tool_args) == {_RAW} else tool_args
        return await asyncio.to_thread(call, self.memory, name, arguments)


@dataclass
class MarkusMemory(AbstractCapability[Any]):
    """The agent's memory as a PydanticAI capability: its tools and its context.

    ``profile`` is the prompt profile (``default``, ``execute``, ``govern``, ``converse``,
    ``reflex``). With ``auto_recall`` what is relevant to the run's text prompt is shown as
    the notebook's relevant-context entry, as the prompt injection does (nothing is written).
    """

    memory: AgentMemory
    profile: str = "default"
    scenario: str | None = None
    names: tuple[str, ...] | None = None
    auto_recall: bool = True
    toolset: MemoryToolset = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"unknown profile {self.profile!r}; use one of {', '.join(PROFILES)}")
        self.toolset = MemoryToolset(self.memory, scenario=self.scenario, names=self.names)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds an open memory handle: not spec-serialisable

    def get_toolset(self) -> MemoryToolset:
        return self.toolset

    def get_instructions(self) -> Any:
        async def memory_context(ctx: RunContext[Any]) -> str:
            prompt = ctx.prompt if isinstance(ctx.prompt, str) and self.auto_recall else None
            context = await asyncio.to_thread(
                render_memory_context, self.memory, self.profile, query=prompt
            )
            return context.text

        return memory_context


__all__ = ["MarkusMemory", "MemoryToolset"]
