"""What is wrong with a PostgreSQL URL that cannot be used, told apart with one fresh connection.

A pool that cannot open says only that no connection came; the Python API and the command line
both want to know why: a server that is not running (or not there), a running server without
the database, a refused login, or a ``search_path`` schema that does not exist. Each comes back
as its own exception (:mod:`markus_memory.errors`) whose message says what to do.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from ...errors import (
    BackendUnavailableError,
    DatabaseMissingError,
    InvalidInputError,
    LoginRefusedError,
    MarkusMemoryError,
    SchemaMissingError,
    one_line,
)

_QUOTED = re.compile(r'"([^"]*)"')
PROBE_TIMEOUT_S = 5


def diagnose(url: str, *, timeout: float = PROBE_TIMEOUT_S) -> MarkusMemoryError | None:
    """The error that explains why ``url`` cannot be used, or None when it looks fine (or the
    ``[postgres]`` extra is missing)."""
    try:
        import psycopg
    except ImportError:
        return None
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        return InvalidInputError(
            f"invalid PostgreSQL URL: {one_line(str(exc))}; fix MARKUS_DATABASE_URL"
        )
    place = f"{params.get('host', 'localhost')}:{params.get('port', 5432)}"
    dbname = str(params.get("dbname", params.get("user", "")))
    try:
        conn = psycopg.connect(url, connect_timeout=max(1, round(timeout)), autocommit=True)
    except psycopg.OperationalError as exc:
        reason = one_line(re.split(r"FATAL:|failed:", str(exc).split("\n", 1)[0])[-1])
        return _refusal(reason, place, dbname, params)
    try:
        row = conn.execute("SELECT current_schema()").fetchone()
        path = conn.execute("SHOW search_path").fetchone()
    except psycopg.Error:
        return None
    finally:
        conn.close()
    if row is None or row[0] is None:
        names = [n.strip() for n in str(path[0] if path else "").split(",") if n.strip()]
        schema = names[0].strip('"') if names else "name"
        return SchemaMissingError(
            f"the schema {schema!r} named by search_path in the URL does not exist in database "
            f"{dbname!r} at {place}: create it first with: psql "
            f"{_psql_target(params)} -c {shlex.quote(f'CREATE SCHEMA {_ident(schema)}')} "
            "(its tables are created on first use), or remove the options from the URL"
        )
    return None


def _ident(name: str) -> str:
    """``name`` as a PostgreSQL identifier (quoted unless it is a plain lower-case one)."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


def _psql_target(params: Mapping[str, Any]) -> str:
    parts = [f"-h {params.get('host', 'localhost')}", f"-p {params.get('port', 5432)}"]
    if params.get("user"):
        parts.append(f"-U {params['user']}")
    parts.append(str(params.get("dbname", params.get("user", ""))))
    return " ".join(parts)


def _refusal(
    reason: str, place: str, dbname: str, params: Mapping[str, Any]
) -> BackendUnavailableError:
    quoted = _QUOTED.findall(reason)
    if "does not exist" in reason and reason.startswith("database"):
        name = quoted[0] if quoted else dbname
        return DatabaseMissingError(
            f"PostgreSQL at {place} is running but has no database {name!r}: create it "
            f"(createdb -h {params.get('host', 'localhost')} -p {params.get('port', 5432)}"
            f"{' -U ' + str(params['user']) if params.get('user') else ''} {name}) or fix the "
            "database name in the URL"
        )
    if "authentication failed" in reason or (reason.startswith("role") and quoted):
        return LoginRefusedError(
            f"PostgreSQL at {place} refused the login: {reason}; fix the user or password "
            "in the URL"
        )
    return BackendUnavailableError(
        f"PostgreSQL at {place} is unreachable ({reason}): start the server or fix the host "
        "and port in the URL"
    )
