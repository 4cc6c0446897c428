"""Which memory tools each scenario offers the model (as in the original), as data for hosts."""

from __future__ import annotations

from types import MappingProxyType

_REFLEX = ("memory_save", "memory_search", "update_notebook")
_LIVE = (
    "memory_save",
    "memory_search",
    "memory_update",
    "recall_activity",
    "recall_conversation",
    "update_notebook",
    "clear_notebook",
    "state_update",
    "state_clear",
)

SCENARIO_TOOLS = MappingProxyType(
    {
        "reflex": _REFLEX,
        "heartbeat": _REFLEX,
        "converse": _LIVE,
        "execute": _LIVE,
        "govern": _LIVE,
        "dream": (),
        "triage": ("recall_activity", "memory_search"),
        "deliberation": (
            "recall_activity",
            "memory_search",
            "update_notebook",
            "clear_notebook",
            "update_working_memory",
            "clear_working_memory",
            "memory_save",
            "memory_update",
            "memory_update_longterm",
        ),
        "distillation": (*_REFLEX, "memory_update", "memory_update_longterm"),
        "memory_flush": ("memory_save", "update_notebook"),
    }
)
"""Scenario → the names of the memory tools to offer, in a stable order.

``converse``/``execute``/``govern`` offer the canonical tools (the original offered the
``*_working_memory`` aliases with their own schemas and hid memory_update, although its
Learning Habits text asks for it). ``dream`` sends no tools; ``memory_flush`` only the two
write tools the flush prompt asks for."""
