"""The web UI: ``markus-memory ui``, a local inspector and editor of every agent's memory.

Server-rendered pages (Starlette, Jinja2; a few lines of plain JavaScript for confirmations and
counters, all shipped in the package) over the same layer APIs as the tools, behind the shared
HTTP guard of :mod:`markus_memory.http_guard`. Needs the ``[ui]`` extra.
"""

from __future__ import annotations

from ..errors import ExtraNotInstalledError

try:
    import jinja2  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("ui", exc.name or "starlette") from exc

from .app import DEFAULT_PORT, TOKEN_ENV, create_app

__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "create_app"]
