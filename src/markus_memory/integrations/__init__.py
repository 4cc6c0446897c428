"""Adapters that plug one agent's memory into the frameworks agents are written in.

One module per framework, each behind its own extra, each thin: the memory, its tools and their
contracts stay in :mod:`markus_memory.tools`; an adapter only translates.

- :mod:`.openai_agents` (``[openai-agents]``): a ``Session`` and the tools as ``FunctionTool``.
- :mod:`.langgraph` (``[langgraph]``): a ``BaseStore`` and the tools for LangGraph/LangChain.
- :mod:`.pydantic_ai` (``[pydantic-ai]``): a toolset and the memory context as instructions.
- :mod:`.anthropic_memory` (``[anthropic]``): a backend of the client-side memory tool.
- :mod:`.claude_code` (no extra): Claude Code hooks and their installation.

Importing this package imports no framework; each module raises
:class:`~markus_memory.errors.ExtraNotInstalledError` when its extra is missing.
"""
