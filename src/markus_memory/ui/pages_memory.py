"""Notebook, Knowledge and State: read and edit through the layers' own APIs.

Every edit form carries the fingerprint of the item as the page showed it. The handler takes
the agent's document lock, compares, and only then calls the layer: an item someone changed
meanwhile (a hand edit, the agent itself) is never overwritten; the page shows both texts.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from ..config import OBSERVATION_TYPES
from ..layers.notebook import age_label
from .call import Call
from .web import PageError, fingerprint

TIMELINE_PAGE = 100
SEARCH_LIMIT = 50
"""A search of the timeline lists this many best matches, best first."""


def _conflict(
    call: Call, what: str, current: str | None, sent: str, retry: dict[str, Any]
) -> Response:
    return call.page(
        "conflict.html",
        status=409,
        what=what,
        current=current,
        sent=sent,
        retry={**retry, "fingerprint": fingerprint(current)},
    )


# ---- notebook ---------------------------------------------------------------------------------


def notebook(call: Call) -> Response:
    now = call.now()
    entries = [
        {
            "entry": e,
            "age": age_label(e.updated_at, now),
            "fingerprint": fingerprint(e.text),
            "limit": call.limits.notebook_max_chars_per_entry
            if e.managed == "agent"
            else call.limits.notebook_max_chars_per_system_entry,
        }
        for e in call.memory.notebook.entries()
    ]
    agent_count = sum(1 for e in entries if e["entry"].managed == "agent")
    return call.page("notebook.html", entries=entries, agent_count=agent_count)


def notebook_save(call: Call) -> Response:
    form = call.form
    key = form.required("key", "the entry key")
    text = form.get("text")
    nb = call.memory.notebook
    with nb.documents.lock():
        current = nb.get(key)
        if fingerprint(None if current is None else current.text) != form.get("fingerprint"):
            system = current is not None and current.managed != "agent"
            retry = {"action": "notebook/save", "key": key, "text": text, "system": system}
            return _conflict(
                call,
                f"notebook entry {key!r}",
                None if current is None else current.text,
                text,
                retry,
            )
        if current is not None and current.text.strip() == text.strip():
            return call.done("notebook", f"{key!r} is unchanged; nothing was written")
        managed = "agent" if current is None else current.managed
        if managed != "agent" and form.get("allow_system") != "yes":
            raise PageError(
                403,
                "System entry",
                f"notebook entry {key!r} is managed by the {managed}; tick the box that confirms "
                "you mean to change it (the agent's own writes never replace it).",
            )
        result = nb.upsert(key, text, managed, allow_system=managed != "agent")
    parts = [f"saved {key!r}"]
    if result.truncated:
        parts.append(f"cut to its cap of {result.limit} chars")
    if result.evicted:
        parts.append(f"evicted the oldest agent entry {result.evicted!r} (4 slots)")
    return call.done("notebook", "; ".join(parts))


def notebook_clear(call: Call) -> Response:
    form = call.form
    scope = form.get("scope", "key")
    nb = call.memory.notebook
    if scope == "agent":
        removed = nb.clear()
        return call.done("notebook", f"cleared {removed} agent entries")
    if scope == "all":
        if form.get("allow_system") != "yes":
            raise PageError(
                403,
                "System entries",
                "clearing everything removes system entries too; tick the box that confirms it.",
            )
        removed = nb.clear(all=True, allow_system=True)
        return call.done("notebook", f"cleared all {removed} entries")
    key = form.required("key", "the entry key")
    with nb.documents.lock():
        current = nb.get(key)
        if current is None:
            return call.done("notebook", f"{key!r} was already gone")
        if fingerprint(current.text) != form.get("fingerprint"):
            retry = {"action": "notebook/clear", "key": key, "text": ""}
            return _conflict(call, f"notebook entry {key!r}", current.text, "(clear)", retry)
        if current.managed != "agent" and form.get("allow_system") != "yes":
            raise PageError(
                403,
                "System entry",
                f"{key!r} is managed by the {current.managed}; tick the box that confirms you "
                "mean to remove it.",
            )
        nb.clear(key, allow_system=current.managed != "agent")
    return call.done("notebook", f"removed {key!r}")


# ---- knowledge --------------------------------------------------------------------------------


def knowledge(
    call: Call, *, refusal: Any = None, draft: dict[str, str] | None = None, status: int = 200
) -> Response:
    memory = call.memory
    doc = memory.knowledge.read()
    sections = [
        {
            "name": s.name,
            "body": s.body.strip(),
            "chars": len(s.body.strip()),
            "fingerprint": fingerprint(s.body.strip()),
        }
        for s in doc.sections
    ]
    type_filter = call.params.choice("type", OBSERVATION_TYPES)
    tag_filter = call.query("tag").strip()
    query = call.query("q").strip()
    if query:
        now = memory.settings.clock()
        hits = memory.search(query, limit=SEARCH_LIMIT, type=type_filter or None, now=now).hits
        by_id = {o.id: o for o in doc.observations}
        timeline = [
            by_id[h.id]
            for h in hits
            if h.source != "curated"
            and h.id in by_id
            and (not tag_filter or tag_filter in by_id[h.id].tags)
        ]
    else:
        timeline = [
            o
            for o in reversed(doc.observations)
            if (not type_filter or o.type == type_filter)
            and (not tag_filter or tag_filter in o.tags)
        ]
    number = call.params.number("page", 1, low=1)
    pages = max(1, -(-len(timeline) // TIMELINE_PAGE))
    number = min(number, pages)
    matched = len(timeline)
    timeline = timeline[(number - 1) * TIMELINE_PAGE : number * TIMELINE_PAGE]
    tags = sorted({t for o in doc.observations for t in o.tags})
    return call.page(
        "knowledge.html",
        status=status,
        sections=sections,
        curated=memory.knowledge.curated_chars(),
        observations=timeline,
        total_observations=len(doc.observations),
        matched=matched,
        page=number,
        pages=pages,
        first=(number - 1) * TIMELINE_PAGE + 1,
        types=OBSERVATION_TYPES,
        tags=tags,
        type_filter=type_filter,
        tag_filter=tag_filter,
        query=query,
        search_limit=SEARCH_LIMIT,
        refusal=refusal,
        draft=draft or {},
    )


def section_save(call: Call) -> Response:
    form = call.form
    name = form.required("name", "the section name")
    content = form.get("content")
    kf = call.memory.knowledge
    with kf.documents.lock():
        current = kf.section(name)
        if fingerprint(current) != form.get("fingerprint"):
            what = f"section {name!r}" if current is not None else f"new section {name!r}"
            retry = {"action": "knowledge/section", "name": name, "content": content}
            return _conflict(call, what, current, content, retry)
        result = kf.update_section(name, content, "replace")
    if not result.ok:
        draft = {"name": name, "content": content, "fingerprint": form.get("fingerprint")}
        return knowledge(call, refusal=result, draft=draft, status=422)
    return call.done("knowledge", f"saved section {name!r} ({result.section_chars} chars)")


ROUTES = (
    ("/notebook", "notebook", notebook, False),
    ("/notebook/save", "notebook", notebook_save, True),
    ("/notebook/clear", "notebook", notebook_clear, True),
    ("/knowledge", "knowledge", knowledge, False),
    ("/knowledge/section", "knowledge", section_save, True),
)
