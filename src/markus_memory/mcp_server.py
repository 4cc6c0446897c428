"""The MCP server: one agent's memory tools, files and prompt context over stdio or HTTP.

Every ``mcp`` import of the package lives in this module, so an SDK rename is a one-file
change. Tools are the registry's (same schemas, same JSON results); a result the registry
marks as an error reaches the client with ``isError``; nothing a client sends can take the
server down. HTTP binds to 127.0.0.1 unless told otherwise and runs behind the shared HTTP guard
(``http_guard``): Host/Origin checks on every bind, a bearer token required anywhere but the
literal loopback names.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from .backend import Health, open_backend
from .errors import ExtraNotInstalledError, MarkusMemoryError, NotFoundError
from .http_guard import (
    DRAIN_SECONDS,
    ASGIApp,
    HttpGuard,
    bind_socket,
    check_binding,
    run_on_socket,
)
from .mcp_stdio import AnswerUnreadable
from .prompt import PROFILES, render_memory_context
from .tools import REGISTRY, dispatch, hide_host_paths, is_tool_error_result, tool_schemas

try:
    import anyio
    import mcp.types as types
    from mcp import MCPError
    from mcp.server import Server, ServerRequestContext
    from mcp.server.stdio import stdio_server
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("mcp", exc.name or "mcp") from exc

if TYPE_CHECKING:
    from .memory import AgentMemory

log = logging.getLogger(__name__)

TOKEN_ENV = "MARKUS_MCP_TOKEN"
"""Environment variable read for the bearer token when ``--token`` is not given."""
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
PROMPT_NAME = "memory_context"

Context = ServerRequestContext[Any, Any]
Paging = types.PaginatedRequestParams | None


@dataclass(frozen=True)
class MemoryResource:
    """One memory file offered as an MCP resource."""

    name: str
    description: str

    def uri(self, agent_id: str) -> str:
        return f"markus://agents/{agent_id}/{self.name}"


RESOURCES = (
    MemoryResource("knowledge.md", "Semantic memory: curated sections and the observation buffer"),
    MemoryResource("NOTEBOOK.md", "Working memory: the notebook injected into every prompt"),
    MemoryResource("state.md", "Current state snapshots (kept for a few days)"),
    MemoryResource("ROLE.md", "Procedural memory: the agent's role (role/ROLE.md)"),
)


def resource_text(memory: AgentMemory, name: str) -> str:
    """The current text of one memory file (empty when the file does not exist yet)."""
    if name == "knowledge.md":
        return memory.knowledge.text()
    if name == "NOTEBOOK.md":
        return memory.notebook.text()
    if name == "state.md":
        return memory.state.text()
    if name == "ROLE.md":
        return memory.roles.system_prompt()
    raise NotFoundError(f"unknown memory file {name!r}")


def _resource_name(memory: AgentMemory, uri: str) -> str:
    for resource in RESOURCES:
        if resource.uri(memory.agent_id) == uri:
            return resource.name
    known = ", ".join(r.uri(memory.agent_id) for r in RESOURCES)
    raise NotFoundError(f"unknown resource {uri!r}; this server has: {known}")


@dataclass(frozen=True)
class Hints:
    """What a tool does to the memory, for the MCP client (hints, not guarantees)."""

    read_only: bool
    destructive: bool
    idempotent: bool


TOOL_HINTS = {
    "memory_save": Hints(read_only=False, destructive=False, idempotent=False),
    "memory_search": Hints(read_only=True, destructive=False, idempotent=True),
    "memory_update": Hints(read_only=False, destructive=True, idempotent=False),
    "memory_list": Hints(read_only=True, destructive=False, idempotent=True),
    "memory_delete": Hints(read_only=False, destructive=True, idempotent=True),
    "memory_update_longterm": Hints(read_only=False, destructive=True, idempotent=False),
    "update_notebook": Hints(read_only=False, destructive=True, idempotent=True),
    "clear_notebook": Hints(read_only=False, destructive=True, idempotent=True),
    "state_update": Hints(read_only=False, destructive=True, idempotent=True),
    "state_clear": Hints(read_only=False, destructive=True, idempotent=True),
    "update_working_memory": Hints(read_only=False, destructive=True, idempotent=True),
    "clear_working_memory": Hints(read_only=False, destructive=True, idempotent=True),
    "recall_activity": Hints(read_only=True, destructive=False, idempotent=True),
    "recall_conversation": Hints(read_only=True, destructive=False, idempotent=True),
}
"""Every registry tool's MCP annotations. A write that can replace or remove what is stored is
destructive (a notebook or state upsert replaces the entry's text; memory_update can replace or
delete a section); memory_save only adds. A tool missing here gets no annotations and fails
the test that checks every tool has them."""

RESULT_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": True}
"""Every tool result is a JSON object (the Markus result shapes): also sent as structured
content."""


def _tool(schema: dict[str, Any]) -> types.Tool:
    hints = TOOL_HINTS.get(schema["name"])
    annotations = None
    if hints is not None:
        annotations = types.ToolAnnotations(
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=False,
        )
    return types.Tool(
        name=schema["name"],
        description=schema["description"],
        input_schema=schema["inputSchema"],
        output_schema=RESULT_SCHEMA,
        annotations=annotations,
    )


def _structured(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def build_server(memory: AgentMemory, *, legacy_tools: bool = False) -> Server[Any]:
    """An MCP server over ``memory``: the registry's tools, the memory files, the context prompt.

    ``legacy_tools`` also lists the Markus legacy aliases (they can be called either way; an
    unknown tool's error names only the tools listed).
    Calls run one at a time in a worker thread, so a slow file lock never stalls the transport.
    """
    limiter = anyio.CapacityLimiter(1)
    offered = tuple(t.name for t in REGISTRY if legacy_tools or not t.legacy)
    tools = [_tool(s) for s in tool_schemas("mcp", names=offered)]

    async def run_sync(func: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(func, limiter=limiter)

    async def list_tools(ctx: Context, params: Paging) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = params.name, params.arguments
        try:
            text = await run_sync(lambda: dispatch(memory, name, arguments, offered=offered))
        except Exception as exc:  # dispatch never raises; this guards the worker thread itself
            log.exception("tool call %s failed outside the registry", name)
            text = json.dumps({"status": "error", "ok": False, "error": f"{name} failed: {exc}"})
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content=_structured(text),
            is_error=is_tool_error_result(text),
        )

    async def list_resources(ctx: Context, params: Paging) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=r.uri(memory.agent_id),
                    name=r.name,
                    description=r.description,
                    mime_type="text/markdown",
                )
                for r in RESOURCES
            ]
        )

    async def read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            name = _resource_name(memory, uri)
            text = await run_sync(lambda: resource_text(memory, name))
        except MarkusMemoryError as exc:
            message = hide_host_paths(str(exc), memory)
            raise MCPError(code=types.INVALID_PARAMS, message=message) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    async def list_prompts(ctx: Context, params: Paging) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=PROMPT_NAME,
                    description="The agent's memory blocks for a system prompt "
                    "(knowledge capped per profile, then the notebook).",
                    arguments=[
                        types.PromptArgument(
                            name="profile",
                            description=f"one of {', '.join(PROFILES)} (default: default)",
                            required=False,
                        ),
                        types.PromptArgument(
                            name="query",
                            description="the current user message; what is relevant to it "
                            "is shown as the relevant-context notebook entry",
                            required=False,
                        ),
                        types.PromptArgument(
                            name="persist_recall",
                            description="true: also store that entry in NOTEBOOK.md "
                            "(default false: the prompt changes no file)",
                            required=False,
                        ),
                    ],
                )
            ]
        )

    async def get_prompt(
        ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        arguments = params.arguments or {}
        if params.name != PROMPT_NAME:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown prompt {params.name!r}; this server has {PROMPT_NAME!r}",
            )
        profile = arguments.get("profile") or "default"
        if profile not in PROFILES:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}",
            )
        query = arguments.get("query") or None
        persist = (arguments.get("persist_recall") or "false").strip().lower()
        if persist not in ("true", "false"):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"persist_recall must be true or false, got {persist!r}",
            )
        try:
            context = await run_sync(
                lambda: render_memory_context(
                    memory, profile, query=query, persist_recall=persist == "true"
                )
            )
        except MarkusMemoryError as exc:
            message = hide_host_paths(str(exc), memory)
            raise MCPError(code=types.INTERNAL_ERROR, message=message) from None
        return types.GetPromptResult(
            description=f"memory context of {memory.agent_id} ({profile})",
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(text=context.text))
            ],
        )

    server: Server[Any] = Server(
        "markus-memory",
        version=_version(),
        instructions=f"Persistent memory of agent {memory.agent_id!r}: save facts with "
        "memory_save, find them with memory_search, keep working notes with update_notebook.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    return server


def _version() -> str:
    try:
        return version("markus-memory")
    except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
        return "0"


def check_http_binding(host: str, token: str | None) -> None:
    """Refuse to serve beyond the literal loopback names without a bearer token."""
    check_binding(host, token, TOKEN_ENV)


def health_of(memory: AgentMemory) -> Health:
    """What ``GET /healthz`` reports for the server of ``memory``."""
    return open_backend(memory.settings).health()


class HealthEndpoint:
    """ASGI: ``GET``/``HEAD`` :data:`HEALTH_PATH` answers :func:`health_of` (200 or 503, JSON);
    every other request goes to ``app``."""

    def __init__(self, app: ASGIApp, check: Callable[[], Health]) -> None:
        self.app = app
        self.check = check

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") != HEALTH_PATH:
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            status, body = 405, {"error": f"{HEALTH_PATH} answers GET"}
        else:
            health = await anyio.to_thread.run_sync(self.check)
            status, body = (200 if health.ok else 503), health.as_json()
        data = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(data)),
            (b"cache-control", b"no-store"),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else data}
        )


def http_app(
    memory: AgentMemory,
    *,
    host: str = DEFAULT_HOST,
    token: str | None = None,
    legacy_tools: bool = False,
) -> ASGIApp:
    """The streamable-HTTP ASGI app at ``/mcp`` (stateless, JSON responses) and the health
    endpoint, behind the shared HTTP guard: Host and Origin checked on every bind; with a
    token, every request but the health check must carry it."""
    check_http_binding(host, token)
    server = build_server(memory, legacy_tools=legacy_tools)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=HTTP_PATH, host=host, stateless_http=True, json_response=True
    )
    health = HealthEndpoint(app, lambda: health_of(memory))
    return HttpGuard(health, host=host, token=token, open_paths=(HEALTH_PATH,))


def serve_stdio(memory: AgentMemory, *, legacy_tools: bool = False) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    server = build_server(memory, legacy_tools=legacy_tools)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            incoming = AnswerUnreadable(read_stream, write_stream)
            await server.run(incoming, write_stream, server.create_initialization_options())

    anyio.run(main)


def serve_http(
    memory: AgentMemory,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    legacy_tools: bool = False,
    drain_seconds: int = DRAIN_SECONDS,
) -> None:
    """Serve streamable HTTP on ``host:port`` until interrupted or sent SIGTERM (then drained:
    see :func:`~.http_guard.run_on_socket`).

    The port is bound first, so a port in use raises :class:`PortInUseError` before anything
    is printed or served.
    """
    app = http_app(memory, host=host, token=token, legacy_tools=legacy_tools)
    sock = bind_socket(host, port)
    run_on_socket(app, sock, drain_seconds=drain_seconds)
