"""A LangGraph search filter as one SQL condition on the JSON ``value`` column, and in Python.

The filter is LangGraph's: each key names a field of the value; a plain value is an equality,
a mapping without ``$`` keys matches a nested object field by field (other fields may exist),
a list matches a list of the same length element by element, and a mapping of operators
(``$eq $ne $gt $gte $lt $lte``) applies each. Comparisons are typed as JSON is (as
PostgreSQL's ``jsonb``, where LangGraph's PostgreSQL store compares): ``true`` is not ``1``,
the string ``"7"`` is not the number ``7``; ``$gt``… compare numbers with numbers and strings
with strings (by code point), and a value of another type (or a missing one) does not pass.
A missing field equals ``None`` and passes ``$ne`` (as LangGraph's in-memory store).

:func:`condition` writes the SQL for either backend; :func:`matches` is the same rule in
Python, the reference the tests compare the SQL with. Field names holding ``"``, ``\\`` or a
control character (escaped in the stored JSON) cannot be addressed in an SQLite JSON path and
are refused on both backends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

Path = tuple[str | int, ...]
Backend = Literal["sqlite", "postgres"]
_UNADDRESSABLE = frozenset('"\\')
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_SQL_OPS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def _check_arg(op: str, arg: Any) -> None:
    if op not in OPERATORS:
        raise ValueError(f"Unsupported operator: {op}")
    if op in _SQL_OPS and not (_is_number(arg) or isinstance(arg, str)):
        raise ValueError(f"{op} compares with a number or a string, got {arg!r}")
    if not _scalar(arg):
        raise ValueError(f"{op} compares with a single value, got {arg!r}")


# -- the rule in Python ----------------------------------------------------------------------


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes ``filter``."""
    return not filter or all(_compare(value.get(k), f) for k, f in filter.items())


def _equal(item: Any, wanted: Any) -> bool:
    if wanted is None or isinstance(wanted, (str, bool)):
        return type(item) is type(wanted) and bool(item == wanted)
    return _is_number(item) and bool(item == wanted)


def _compare(item: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(item, op, arg) for op, arg in wanted.items())
        return isinstance(item, Mapping) and all(
            _compare(item.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(item, list)
            and len(item) == len(wanted)
            and all(_compare(i, w) for i, w in zip(item, wanted, strict=True))
        )
    return _equal(item, wanted)


def _operator(item: Any, op: str, arg: Any) -> bool:
    _check_arg(op, arg)
    if op == "$eq":
        return _equal(item, arg)
    if op == "$ne":
        return not _equal(item, arg)
    if _is_number(arg) and not _is_number(item):
        return False
    if isinstance(arg, str) and not isinstance(item, str):
        return False
    return bool(
        {"$gt": item > arg, "$gte": item >= arg, "$lt": item < arg, "$lte": item <= arg}[op]
    )


# -- the rule in SQL -------------------------------------------------------------------------


def condition(
    backend: Backend, filter: Mapping[str, Any] | None, column: str = "value"
) -> tuple[str, list[Any]]:
    """``filter`` as an SQL condition on ``column`` (``?`` placeholders) and its params;
    ``("", [])`` for no filter."""
    if not filter:
        return "", []
    sql = _Sqlite(column) if backend == "sqlite" else _Postgres(column)
    parts = [sql.compare((str(k),), f) for k, f in filter.items()]
    return " AND ".join(p for p, _ in parts), [v for _, params in parts for v in params]


Clause = tuple[str, list[Any]]


class _Json:
    """The SQL of one backend for a field at a path of the value."""

    def __init__(self, column: str) -> None:
        self.column = column

    def path(self, path: Path) -> Any:
        raise NotImplementedError

    def typed(self, path: Path, kinds: Sequence[str]) -> Clause:
        raise NotImplementedError

    def kinds(self, value: Any) -> tuple[str, ...]:
        raise NotImplementedError

    def equal(self, path: Path, wanted: Any) -> Clause:
        raise NotImplementedError

    def ordered(self, path: Path, op: str, arg: Any) -> Clause:
        raise NotImplementedError

    def length(self, path: Path, n: int) -> Clause:
        raise NotImplementedError

    def missing(self, path: Path) -> Clause:
        raise NotImplementedError

    def compare(self, path: Path, wanted: Any) -> Clause:
        for label in path:
            if isinstance(label, str) and any(c in _UNADDRESSABLE or c < " " for c in label):
                raise ValueError(
                    f"a filter field name cannot hold '\"', '\\' or a control character: {label!r}"
                )
        if isinstance(wanted, Mapping):
            if any(str(k).startswith("$") for k in wanted):
                return _all([self.operator(path, op, arg) for op, arg in wanted.items()])
            nested = [self.compare((*path, str(k)), v) for k, v in wanted.items()]
            return _all([self.typed(path, self.kinds({})), *nested])
        if isinstance(wanted, (list, tuple)):
            items = [self.compare((*path, i), w) for i, w in enumerate(wanted)]
            return _all([self.length(path, len(wanted)), *items])
        _check_arg("$eq", wanted)
        return self.equal(path, wanted)

    def operator(self, path: Path, op: str, arg: Any) -> Clause:
        _check_arg(op, arg)
        if op == "$eq":
            return self.equal(path, arg)
        if op == "$ne":
            sql, params = self.equal(path, arg)
            return f"NOT COALESCE(({sql}), FALSE)", params
        return self.ordered(path, op, arg)


def _all(clauses: Sequence[Clause]) -> Clause:
    return (
        "(" + " AND ".join(c for c, _ in clauses) + ")",
        [v for _, params in clauses for v in params],
    )


class _Sqlite(_Json):
    def path(self, path: Path) -> str:
        return "$" + "".join(f"[{p}]" if isinstance(p, int) else f'."{p}"' for p in path)

    def kinds(self, value: Any) -> tuple[str, ...]:
        if value is None:
            return ("null",)
        if isinstance(value, bool):
            return ("true",) if value else ("false",)
        if isinstance(value, str):
            return ("text",)
        if isinstance(value, Mapping):
            return ("object",)
        return ("integer", "real")

    def typed(self, path: Path, kinds: Sequence[str]) -> Clause:
        marks = ", ".join("?" * len(kinds))
        return f"json_type({self.column}, ?) IN ({marks})", [self.path(path), *kinds]

    def equal(self, path: Path, wanted: Any) -> Clause:
        if wanted is None:
            return self.missing(path)
        typed, params = self.typed(path, self.kinds(wanted))
        if isinstance(wanted, bool):
            return typed, params
        return f"({typed} AND json_extract({self.column}, ?) = ?)", [
            *params,
            self.path(path),
            wanted,
        ]

    def ordered(self, path: Path, op: str, arg: Any) -> Clause:
        typed, params = self.typed(path, self.kinds(arg))
        return f"({typed} AND json_extract({self.column}, ?) {_SQL_OPS[op]} ?)", [
            *params,
            self.path(path),
            arg,
        ]

    def length(self, path: Path, n: int) -> Clause:
        typed, params = self.typed(path, ("array",))
        return f"({typed} AND json_array_length({self.column}, ?) = ?)", [
            *params,
            self.path(path),
            n,
        ]

    def missing(self, path: Path) -> Clause:
        return f"COALESCE(json_type({self.column}, ?), 'null') = 'null'", [self.path(path)]


class _Postgres(_Json):
    def path(self, path: Path) -> list[str]:
        return [str(p) for p in path]

    def kinds(self, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            return ("string",)
        if isinstance(value, Mapping):
            return ("object",)
        return ("number",)

    def typed(self, path: Path, kinds: Sequence[str]) -> Clause:
        return f"jsonb_typeof({self.column} #> ?::text[]) = ?", [self.path(path), kinds[0]]

    def equal(self, path: Path, wanted: Any) -> Clause:
        if wanted is None:
            return self.missing(path)
        return f"{self.column} #> ?::text[] = ?::jsonb", [self.path(path), json.dumps(wanted)]

    def ordered(self, path: Path, op: str, arg: Any) -> Clause:
        kind = self.kinds(arg)[0]
        field = f"{self.column} #>> ?::text[]"
        when = f"CASE WHEN jsonb_typeof({self.column} #> ?::text[]) = ? THEN"
        if kind == "number":
            value = f"({when} ({field})::double precision END)"
        else:
            value = f'({when} {field} END) COLLATE "C"'
        return f"{value} {_SQL_OPS[op]} ?", [self.path(path), kind, self.path(path), arg]

    def length(self, path: Path, n: int) -> Clause:
        field = f"{self.column} #> ?::text[]"
        return (
            f"(CASE WHEN jsonb_typeof({field}) = 'array' THEN jsonb_array_length({field}) END) = ?",
            [self.path(path), self.path(path), n],
        )

    def missing(self, path: Path) -> Clause:
        return f"COALESCE(jsonb_typeof({self.column} #> ?::text[]), 'null') = 'null'", [
            self.path(path)
        ]
