"""knowledge.md tools: memory_save, memory_search, memory_update and their legacy aliases."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..config import iso_ms
from ._registry import ToolDefinition
from ._results import Result, ToolCallError
from ._schema import NOT_BLANK, arguments, text
from ._validation import (
    OBSERVATION_TYPES,
    SAVE_TYPES,
    example,
    id_list,
    optional_string,
    tag_list,
    whole_number,
)

if TYPE_CHECKING:
    from ..memory import AgentMemory

STORE = "knowledge.md"
SEARCH_MAX_LIMIT = 50
LIST_MAX_LIMIT = 500
DELETE_MAX_IDS = 20
UPDATE_MODES = ("replace", "patch", "append", "delete")

SAVE_EXAMPLE = {"content": "The user prefers answers in German.", "type": "fact", "tags": ["user"]}
SEARCH_EXAMPLE = {"query": "deploy staging", "limit": 5}
UPDATE_EXAMPLE = {"section": "procedures", "mode": "patch", "content": "- Run tests before deploy"}
DELETE_EXAMPLE = {"section": "procedures", "mode": "delete", "ids": ["obs_1700000000000_ab12cd"]}


def observation_dict(obs: Any, *, with_tags: bool = True) -> Result:
    """An observation as the tools show it: ``{id, type, content, timestamp, tags?}``."""
    tags = list(obs.tags) if with_tags and obs.tags else None
    return {
        "id": obs.id,
        "type": obs.type,
        "content": obs.content,
        "timestamp": iso_ms(obs.timestamp),
        "tags": tags,
    }


def hit_dict(hit: Any) -> Result:
    """A search hit as memory_search shows it (``similarity`` / ``source`` only when known)."""
    timestamp = getattr(hit, "timestamp", None)
    tags = getattr(hit, "tags", None)
    return {
        "id": hit.id,
        "type": hit.type,
        "content": hit.content,
        "timestamp": iso_ms(timestamp) if timestamp is not None else "",
        "similarity": getattr(hit, "similarity", None),
        "tags": list(tags) if tags else None,
        "source": "curated" if getattr(hit, "source", None) == "curated" else None,
    }


def memory_save(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    content: str = args["content"]
    kind = args.get("type", "fact")
    tags = tag_list(args.get("tags"))
    obs = memory.knowledge.save_observation(content.strip(), type=kind, tags=tags)
    return {"status": "saved", "id": obs.id, "type": obs.type, "store": STORE}


def memory_search(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    query = optional_string(args, "query") or ""
    kind = optional_string(args, "type")
    limit = whole_number(args, "limit", 10)
    if not query.strip():
        entries = memory.knowledge.observations(type=kind, limit=limit)
        listed = [observation_dict(o) for o in entries]
        return {"entries": listed, "count": len(listed), "store": STORE}
    found = memory.search(query, limit=limit, type=kind, now=memory.settings.clock())
    hits = [hit_dict(h) for h in found.hits][:limit]
    method = found.search_method or "keyword"
    return {"results": hits, "count": len(hits), "searchMethod": method, "store": STORE}


def _mode(args: Mapping[str, Any]) -> str:
    """The schema-checked mode; absent → replace, append → patch."""
    mode = str(args.get("mode", "replace"))
    return "patch" if mode == "append" else mode


def _delete(memory: AgentMemory, args: Mapping[str, Any], hint: str) -> Result:
    if "ids" not in args:
        raise ToolCallError("Provide ids to delete. " + hint)
    ids = id_list(args["ids"])
    removed = memory.knowledge.remove_observations(ids)
    return {"status": "deleted", "removed": removed, "store": STORE}


def _write_section(memory: AgentMemory, section: str, content: str, mode: str) -> Result:
    result = memory.knowledge.update_section(section, content, mode=mode)
    if not result.ok:
        reason = result.reason or "knowledge.md write refused"
        raise ToolCallError(
            reason,
            reason=reason,
            section=section,
            mode=mode,
            sectionChars=result.section_chars,
            sectionLimit=result.section_limit,
            curatedChars=result.curated_chars,
            curatedLimit=result.curated_limit,
        )
    shown = {"status": "updated", "section": section, "mode": mode, "note": result.note}
    return {**shown, "store": STORE}


def memory_update(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    mode = _mode(args)
    if mode == "delete":
        return _delete(memory, args, "Example: " + example("memory_update", DELETE_EXAMPLE))
    if "content" not in args:  # the one rule the advertised schema cannot state
        raise ToolCallError(
            f'mode {mode} needs "content", the new text; the section is left as it is. '
            "Example: " + example("memory_update", UPDATE_EXAMPLE)
        )
    return _write_section(memory, args["section"].strip(), args["content"], mode)


def memory_update_longterm(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    return _write_section(memory, args["section"].strip(), args["content"], _mode(args))


def memory_list(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    kind = optional_string(args, "type")
    limit = whole_number(args, "limit", 15)
    entries = memory.knowledge.observations(type=kind, limit=limit)
    listed = [observation_dict(o, with_tags=False) for o in entries]
    return {"entries": listed, "count": len(listed), "store": STORE}


def memory_delete(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    hint = "Example: " + example("memory_delete", {"ids": ["obs_1700000000000_ab12cd"]})
    hint += " or " + example("memory_delete", {"tag": "temp"})
    if "ids" in args:
        removed = memory.knowledge.remove_observations(id_list(args["ids"]))
    elif "tag" in args:
        removed = memory.knowledge.remove_observations_by_tag(args["tag"].strip())
    else:
        raise ToolCallError("Provide ids or tag. " + hint)
    return {"status": "deleted", "removed": removed, "store": STORE}


_TYPE_ENUM = {"type": "string", "enum": list(OBSERVATION_TYPES)}
_IDS = {
    "type": "array",
    "items": {"type": "string", "pattern": NOT_BLANK},
    "minItems": 1,
    "maxItems": DELETE_MAX_IDS,
}

TOOLS = (
    ToolDefinition(
        name="memory_save",
        description=(
            "Save ONE observation (a fact, note or insight worth keeping) to the observation "
            "buffer in knowledge.md (## _observations). Observations are not shown in your "
            "prompt automatically; find them later with memory_search. Call once per insight "
            "with an object, never with an array. Success looks like "
            '{"status":"saved","store":"knowledge.md"}. For multi-step procedures or durable '
            "lessons use memory_update instead."
        ),
        parameters=arguments(
            {
                "content": text("The observation, one self-contained statement."),
                "type": {
                    "type": "string",
                    "enum": list(SAVE_TYPES),
                    "description": "fact (default), note or insight.",
                },
                "tags": {
                    "oneOf": [
                        {"type": "string"},
                        {"type": "array", "items": {"type": "string"}},
                    ],
                    "description": "Optional tags: an array or a comma-separated string.",
                },
            },
            "content",
        ),
        handler=memory_save,
        example=SAVE_EXAMPLE,
        store=STORE,
    ),
    ToolDefinition(
        name="memory_search",
        description=(
            "Search your memory: observations and curated knowledge.md sections. Keywords are "
            "OR-matched; an empty query lists the most recent observations. Returns "
            '{"results":[…],"count","searchMethod","store":"knowledge.md"}.'
        ),
        parameters=arguments(
            {
                "query": {
                    "type": "string",
                    "description": "Keywords, OR-matched. Empty = list recent observations.",
                },
                "type": {**_TYPE_ENUM, "description": "Only this observation type."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": SEARCH_MAX_LIMIT,
                    "description": f"Maximum results, 1-{SEARCH_MAX_LIMIT} (default 10).",
                },
            }
        ),
        handler=memory_search,
        example=SEARCH_EXAMPLE,
        store=STORE,
    ),
    ToolDefinition(
        name="memory_update",
        description=(
            "Update a curated section of knowledge.md; curated sections appear in your prompt "
            "as '## Your Knowledge'. Use it for procedures and durable lessons. Prefer "
            "mode 'patch' (adds to the section; 'append' is the same) over 'replace' (rewrites "
            "it). A section holds up to 3000 chars, all sections together 15000. '##' headings "
            "inside content become '###'. mode 'delete' removes observations "
            'by ids. Success looks like {"status":"updated","store":"knowledge.md"}; if a write '
            "is refused the result says why and how large the section and file are."
        ),
        parameters=arguments(
            {
                "section": text("Section name, e.g. procedures."),
                "content": text("Text to write (required for replace/patch/append)."),
                "mode": {
                    "type": "string",
                    "enum": list(UPDATE_MODES),
                    "description": "replace (default), patch, append (= patch) or delete.",
                },
                "ids": {
                    **_IDS,
                    "description": f"Ids to delete (mode delete, max {DELETE_MAX_IDS}).",
                },
            },
            "section",
        ),
        handler=memory_update,
        example=UPDATE_EXAMPLE,
        store=STORE,
    ),
    ToolDefinition(
        name="memory_list",
        description=(
            "Legacy alias: list the most recent observations "
            "(memory_search with an empty query does the same)."
        ),
        parameters=arguments(
            {
                "type": _TYPE_ENUM,
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": LIST_MAX_LIMIT,
                    "description": f"1-{LIST_MAX_LIMIT} (default 15).",
                },
            }
        ),
        handler=memory_list,
        example={"limit": 15},
        store=STORE,
        legacy=True,
    ),
    ToolDefinition(
        name="memory_delete",
        description="Legacy alias: delete observations by ids (at most 20) or by tag.",
        parameters=arguments({"ids": _IDS, "tag": text("Delete the observations with this tag.")}),
        handler=memory_delete,
        example={"ids": ["obs_1700000000000_ab12cd"]},
        store=STORE,
        legacy=True,
    ),
    ToolDefinition(
        name="memory_update_longterm",
        description=(
            "Legacy alias of memory_update for curated knowledge.md sections "
            "(modes replace, patch, append = patch)."
        ),
        parameters=arguments(
            {
                "section": text("Section name."),
                "content": text("Text to write."),
                "mode": {
                    "type": "string",
                    "enum": ["replace", "patch", "append"],
                    "description": "replace (default), patch or append (= patch). To delete "
                    "observations use memory_update with mode delete.",
                },
            },
            "section",
            "content",
        ),
        handler=memory_update_longterm,
        example=UPDATE_EXAMPLE,
        store=STORE,
        legacy=True,
    ),
)
