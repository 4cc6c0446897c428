"""What every page of the UI shares: templates, bounded form reading, fingerprints, errors."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qsl

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from . import form_tokens

MAX_FORM_BYTES = 2_000_000
"""A form body larger than this is refused with 413 (the layers cap entries far below it)."""
MAX_FIELDS = 1_000
MAX_QUERY_BYTES = 8_000
MAX_NUMBER_DIGITS = 6
STATIC = files("markus_memory.ui") / "static"


class PageError(Exception):
    """An error page: ``status`` and a sentence saying what happened and what to do."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail


def changed_meanwhile(what: str, verb: str) -> PageError:
    """The 409 refusal of a write whose item changed since the page showed it."""
    return PageError(
        409,
        "Changed meanwhile",
        f"{what} changed since the page was loaded (a hand edit, or the agent itself); nothing "
        f"was {verb}. Reload the page and try again.",
    )


def fingerprint(text: str | None) -> str:
    """A short content hash put in edit forms: a changed item means someone else saved."""
    if text is None:
        return "absent"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


@dataclass(frozen=True)
class Form:
    """Submitted fields (url-encoded only, line ends normalised to LF); repeated names keep
    every value. Also the parsed query string."""

    fields: tuple[tuple[str, str], ...]

    def get(self, name: str, default: str = "") -> str:
        return next((v for k, v in self.fields if k == name), default)

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.fields if k == name]

    def required(self, name: str, what: str) -> str:
        value = self.get(name).strip()
        if not value:
            raise PageError(400, "Missing field", f"{what} is required; fill it in and send again.")
        return value

    def number(self, name: str, default: int, *, low: int = 0) -> int:
        """A whole number of at most :data:`MAX_NUMBER_DIGITS` ASCII digits, ``>= low``;
        ``default`` when absent or empty; anything else is refused with 400."""
        value = self.get(name).strip()
        if not value:
            return default
        if not (value.isascii() and value.isdigit()) or len(value) > MAX_NUMBER_DIGITS:
            shown = value if len(value) <= 20 else value[:20] + "…"
            raise PageError(
                400,
                "Malformed parameter",
                f"{name} must be a whole number from {low} to {10**MAX_NUMBER_DIGITS - 1}, "
                f"not {shown!r}.",
            )
        number = int(value)
        if number < low:
            raise PageError(
                400, "Malformed parameter", f"{name} must be at least {low}, not {number}."
            )
        return number

    def choice(self, name: str, allowed: Collection[str]) -> str:
        """The value of ``name``: empty, or one of ``allowed`` (400 otherwise)."""
        value = self.get(name).strip()
        if value and value not in allowed:
            raise PageError(
                400,
                "Malformed parameter",
                f"{name} must be one of {', '.join(sorted(allowed))}, not {value[:40]!r}.",
            )
        return value


def parse_fields(text: str, what: str) -> tuple[tuple[str, str], ...]:
    """``a=1&b=2`` strictly: malformed pairs, invalid UTF-8 behind percent escapes and NUL
    characters are refused (400), never replaced; CR LF and lone CR become LF."""
    try:
        pairs = parse_qsl(
            text,
            keep_blank_values=True,
            strict_parsing=bool(text),
            max_num_fields=MAX_FIELDS,
            encoding="utf-8",
            errors="strict",
        )
    except UnicodeDecodeError as exc:
        raise PageError(
            400,
            f"Malformed {what}",
            f"the {what} is not valid UTF-8 (a percent-escape decodes to byte "
            f"{exc.object[exc.start]:#04x}); nothing was changed.",
        ) from None
    except ValueError as exc:
        raise PageError(400, f"Malformed {what}", f"the {what} could not be read: {exc}.") from None
    if any("\x00" in k or "\x00" in v for k, v in pairs):
        raise PageError(400, f"Malformed {what}", f"the {what} contains a NUL character.")
    return tuple((k, v.replace("\r\n", "\n").replace("\r", "\n")) for k, v in pairs)


def read_query(request: Request) -> Form:
    """The query string, parsed as strictly as a form (400 on anything malformed)."""
    raw: bytes = request.scope.get("query_string", b"")
    if len(raw) > MAX_QUERY_BYTES:
        raise PageError(414, "Address too long", "the query string is too long.")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise PageError(400, "Malformed address", "the query string is not ASCII.") from None
    return Form(parse_fields(text, "address"))


async def read_form(request: Request) -> Form:
    """The url-encoded body, refused clearly when too large, of another type or not UTF-8."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise PageError(
            415,
            "Unsupported form",
            f"forms must be sent url-encoded, not {kind or 'without a content type'}.",
        )
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_FORM_BYTES):
        raise PageError(413, "Form too large", _too_large(declared))
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise PageError(413, "Form too large", _too_large(None))
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PageError(
            400, "Malformed form", f"the form is not valid UTF-8 (byte {exc.start})."
        ) from None
    form = Form(parse_fields(text, "form"))
    if not form_tokens.valid(request, form.get(form_tokens.FIELD)):
        raise PageError(
            403,
            "Form refused",
            "this form did not come from a page of this UI in this browser (its form token is "
            "missing or stale, e.g. after the UI restarted); nothing was changed. Reload the "
            "page and send again.",
        )
    return form


def _too_large(declared: str | None) -> str:
    size = f" ({declared} bytes)" if declared and declared.isdigit() else ""
    return (
        f"the form{size} is over the limit of {MAX_FORM_BYTES:,} bytes; nothing was changed. "
        "Send less text (entries and sections have far smaller caps)."
    )


def _ago(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "never"
    seconds = (now - moment).total_seconds()
    if seconds < 0:
        return "in the future"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{math.floor(seconds / size)} {unit} ago"
    return "just now"


def _until(moment: datetime, now: datetime) -> str:
    left = moment - now
    if left <= timedelta(0):
        return "expired (pruned at the next prune)"
    days, rest = divmod(int(left.total_seconds()), 86400)
    hours = rest // 3600
    return f"{days} d {hours} h" if days else f"{hours} h {rest % 3600 // 60} min"


def _when(moment: datetime | None) -> str:
    if moment is None:
        return ""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _percent(value: int, limit: int) -> int:
    return 0 if limit <= 0 else min(100, round(100 * value / limit))


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("markus_memory.ui", "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["percent"] = lambda pair: _percent(*pair)
    env.globals["ago"] = _ago
    env.globals["until"] = _until
    env.globals["fingerprint"] = fingerprint
    return env


class Templates:
    """Renders a template into an HTML response with the shared page context."""

    def __init__(self, token_required: bool) -> None:
        self.env = environment()
        self.token_required = token_required

    def page(
        self, request: Request, name: str, context: Mapping[str, Any], *, status: int = 200
    ) -> HTMLResponse:
        html = self.env.get_template(name).render(
            {
                "token_required": self.token_required,
                "form_token": form_tokens.token_of(request),
                **context,
            }
        )
        return HTMLResponse(html, status_code=status)
