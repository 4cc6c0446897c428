"""LangGraph: a ``BaseStore`` over the agent's episodic database, and the memory tools.

:class:`MarkusStore` implements ``batch``/``abatch`` over ``GetOp``, ``PutOp`` (``value=None``
deletes), ``SearchOp`` and ``ListNamespacesOp`` (prefix/suffix conditions with ``*``,
``max_depth``, ``limit``/``offset``), with TTL in minutes. Items persist in the database of the
agent's episodic store: ``data.db`` by default, PostgreSQL with ``MARKUS_DATABASE_URL``.

A search is answered in SQL on both backends: the namespace prefix, the ``filter``
(:mod:`markus_memory.storage.kv_filter`: equality, nested objects, lists, ``$eq $ne $gt $gte
$lt $lte``), the order and the ``limit``/``offset`` page, and only the page is decoded.
Without a query the items come as LangGraph's ``PostgresStore`` orders them: the last updated
first (its ``InMemoryStore`` keeps insertion order instead); ties by namespace and key. A
query without an embedder ranks by BM25 over the library's one analyser (the stems, stop
words and CJK pairs of knowledge search and recall: "drink" finds "drinks", "绿茶" finds
"安娜喜欢喝绿茶"), and only items holding a query term are returned (LangGraph's own stores
ignore a query when they have no embedder). With an embedder a query ranks by cosine
similarity, the items without a vector after the others. Every read of one batch sees the
state before the batch; the batch's writes land in one transaction after all of it is
validated, so a bad op (a namespace LangGraph forbids, a value that is not a JSON object)
raises before anything is written. ``abatch`` runs the batch in a worker thread: the event
loop never waits on the database.

:func:`memory_tools` gives the registry's tools as LangChain ``StructuredTool`` objects for
LangGraph/LangChain agents (``ToolNode``, ``create_react_agent`` …).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ExtraNotInstalledError
from ..storage.kv import SEP, KVTable, Row, Where, Write
from ..storage.kv_filter import matches
from ._tools import call, parameters, select_tools

try:
    from langchain_core.tools import StructuredTool
    from langgraph.store.base import (
        NOT_PROVIDED,
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        get_text_at_path,
        tokenize_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("langgraph", exc.name or "langgraph") from exc

if TYPE_CHECKING:
    from ..memory import AgentMemory
    from ..search.embedders import Embedder


class MarkusStore(BaseStore):
    """A LangGraph long-term memory store persisted beside ``memory``'s episodic store.

    ``fields`` are the JSON paths whose strings and numbers are an item's words (as in
    LangGraph's ``IndexConfig``; ``"$"``, the default, is the whole value; field names are not
    words), for BM25 and, with an ``embedder`` (default: the one ``memory`` was opened with),
    for vector search. ``ttl`` is a LangGraph ``TTLConfig`` (``default_ttl`` in minutes,
    ``refresh_on_read``); expired items are never returned and :meth:`sweep_ttl` deletes them.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: AgentMemory,
        *,
        embedder: Embedder | None = None,
        fields: Sequence[str] = ("$",),
        ttl: TTLConfig | None = None,
    ) -> None:
        self.memory = memory
        self.embedder = embedder if embedder is not None else memory.embedder
        self.fields = tuple(fields)
        self.ttl_config = ttl
        self._table: KVTable = memory.backend.kv_table(memory.agent_id)

    # -- BaseStore ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            _validate(op)
        now = self.memory.settings.clock()
        stamp = now.timestamp()
        writes = {
            (w.namespace, w.key): w
            for w in self._writes([op for op in ops if isinstance(op, PutOp)], stamp)
        }
        refreshes: dict[tuple[str, str], float] = {}
        got = self._get([op for op in ops if isinstance(op, GetOp)], stamp, refreshes)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(_item(got.get((SEP.join(op.namespace), op.key))))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, stamp, refreshes))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, stamp))
            else:
                results.append(None)
        if writes or refreshes:
            refreshed = [
                (ns, key, at) for (ns, key), at in refreshes.items() if (ns, key) not in writes
            ]
            self._table.apply(list(writes.values()), refreshed, now)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Delete the expired items; how many were deleted."""
        return self._table.sweep(self.memory.settings.clock().timestamp())

    def close(self) -> None:
        self._table.close()

    # -- ops ---------------------------------------------------------------------------------

    def _refresh(
        self, row: Row, wanted: bool | None, stamp: float, into: dict[tuple[str, str], float]
    ) -> None:
        refresh = (
            wanted if wanted is not None else (self.ttl_config or {}).get("refresh_on_read", True)
        )
        if refresh and row.ttl_minutes is not None:
            into[(row.namespace, row.key)] = stamp + row.ttl_minutes * 60

    def _get(
        self, ops: Sequence[GetOp], stamp: float, refreshes: dict[tuple[str, str], float]
    ) -> dict[tuple[str, str], Row]:
        found = self._table.get([(SEP.join(op.namespace), op.key) for op in ops], stamp)
        for op in ops:
            row = found.get((SEP.join(op.namespace), op.key))
            if row is not None:
                self._refresh(row, op.refresh_ttl, stamp, refreshes)
        return found

    def _search(
        self, op: SearchOp, stamp: float, refreshes: dict[tuple[str, str], float]
    ) -> list[SearchItem]:
        where = Where(SEP.join(op.namespace_prefix), op.filter, stamp)
        limit, offset = max(op.limit, 0), max(op.offset, 0)
        page: list[tuple[Row, float | None]]
        if op.query and self.embedder is not None:
            page = self._nearest(where, op.query, limit, offset)
        elif op.query:
            page = list(self._table.ranked(where, op.query, limit, offset))
        else:
            page = [(row, None) for row in self._table.recent(where, limit, offset)]
        for row, _ in page:
            self._refresh(row, op.refresh_ttl, stamp, refreshes)
        return [
            SearchItem(
                namespace=tuple(row.namespace.split(SEP)),
                key=row.key,
                value=row.value,
                created_at=row.created_at,
                updated_at=row.updated_at,
                score=score,
            )
            for row, score in page
        ]

    def _nearest(
        self, where: Where, query: str, limit: int, offset: int
    ) -> list[tuple[Row, float | None]]:
        """Cosine similarity to the query's vector, best first; the items without a vector
        after them, the last updated first."""
        assert self.embedder is not None
        wanted = self.embedder.embed([query])[0]
        candidates = self._table.vectors(where)
        scored = sorted(
            ((_cosine(wanted, v), doc) for doc, v in candidates if v is not None),
            key=lambda pair: -pair[0],
        )
        ranked: list[tuple[float | None, int]] = [
            *scored,
            *((None, doc) for doc, v in candidates if v is None),
        ]
        chosen = ranked[offset : offset + limit]
        rows = self._table.by_doc([doc for _, doc in chosen])
        return [(rows[doc], score) for score, doc in chosen if doc in rows]

    def _list_namespaces(self, op: ListNamespacesOp, stamp: float) -> list[tuple[str, ...]]:
        found = [tuple(ns.split(SEP)) for ns in self._table.namespaces(stamp)]
        found = [ns for ns in found if all(_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            found = [ns[: op.max_depth] for ns in found]
        ordered = sorted(set(found))
        return ordered[op.offset : op.offset + op.limit]

    def _writes(self, ops: Sequence[PutOp], stamp: float) -> list[Write]:
        """The batch's writes, the last put of a key winning (every value is checked); the
        vectors in one call."""
        stored = {id(op): _json(op.value) for op in ops if op.value is not None}
        last = {(SEP.join(op.namespace), op.key): op for op in ops}
        texts = {k: self._text(op) for k, op in last.items() if op.value is not None}
        embedded = [k for k, text in texts.items() if text]
        vectors: dict[tuple[str, str], list[float]] = {}
        if self.embedder is not None and embedded:
            made = self.embedder.embed([texts[k] for k in embedded])
            vectors = {k: list(v) for k, v in zip(embedded, made, strict=True)}
        writes = []
        for (ns, key), op in last.items():
            if op.value is None:
                writes.append(Write(ns, key, None))
                continue
            ttl: Any = op.ttl
            if ttl is NOT_PROVIDED:
                ttl = (self.ttl_config or {}).get("default_ttl")
            minutes = None if ttl is None else float(ttl)
            writes.append(
                Write(
                    ns,
                    key,
                    stored[id(op)],
                    texts[(ns, key)],
                    vectors.get((ns, key)),
                    None if minutes is None else stamp + minutes * 60,
                    minutes,
                )
            )
        return writes

    def _text(self, op: PutOp) -> str:
        """The words of the value's indexed fields: the strings and numbers at each path
        (not the field names), "" with ``index=False``."""
        if op.index is False or op.value is None:
            return ""
        paths = self.fields if op.index is None else tuple(op.index)
        value = dict(op.value)
        found: list[str] = []
        for path in paths:
            if path == "$":
                found.extend(_leaves(value))
                continue
            for text in get_text_at_path(value, tokenize_path(path)):
                found.extend(_leaves(_container(text)))
        return "\n".join(found)


def _json(value: Any) -> str:
    try:
        return json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a stored value must be JSON-serialisable: {exc}") from None


def _container(text: str) -> Any:
    """An object or a list ``get_text_at_path`` gave as its JSON, else the text itself."""
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _leaves(node: Any) -> Iterator[str]:
    """The strings and numbers inside a JSON value, in order."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield str(node)
    elif isinstance(node, Mapping):
        for child in node.values():
            yield from _leaves(child)
    elif isinstance(node, list):
        for child in node:
            yield from _leaves(child)


def _item(row: Row | None) -> Item | None:
    if row is None:
        return None
    return Item(
        value=row.value,
        key=row.key,
        namespace=tuple(row.namespace.split(SEP)),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _validate(op: object) -> None:
    """Refuse what LangGraph's own stores refuse, before anything is read or written."""
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise ValueError(f"Unknown operation type: {type(op)}")
    validate_op_namespace(op)
    if isinstance(op, (GetOp, PutOp)) and not isinstance(op.key, str):
        raise InvalidNamespaceError(f"Keys must be strings, got {type(op.key).__name__}")
    if isinstance(op, PutOp):
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
            )
        if op.value is not None:
            if not isinstance(op.value, Mapping):
                raise TypeError(f"a stored value must be a dict, got {type(op.value).__name__}")
        ttl: Any = op.ttl
        if (
            ttl is not None
            and ttl is not NOT_PROVIDED
            and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0)
        ):
            raise ValueError(f"ttl must be a positive number of minutes, got {ttl!r}")


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or n == p for n, p in pairs)


def _cosine(a: Sequence[float], b: Sequence[float] | None) -> float:
    if not b:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def memory_tools(
    memory: AgentMemory, *, scenario: str | None = None, names: Iterable[str] | None = None
) -> list[StructuredTool]:
    """The memory tools as LangChain tools; each call runs through ``dispatch`` and returns
    its JSON text (an error result, never an exception, for a bad call)."""
    return [
        _tool(memory, t.name, t.description, parameters(t))
        for t in select_tools(scenario=scenario, names=names)
    ]


def _tool(
    memory: AgentMemory, name: str, description: str, schema: dict[str, Any]
) -> StructuredTool:
    def run(**arguments: Any) -> str:
        return call(memory, name, arguments)

    async def arun(**arguments: Any) -> str:
        return await asyncio.to_thread(call, memory, name, arguments)

    return StructuredTool(
        name=name,
        description=description,
        args_schema=schema,
        func=run,
        coroutine=arun,
        handle_tool_error=True,
        handle_validation_error=True,
    )


__all__ = ["MarkusStore", "matches", "memory_tools"]
