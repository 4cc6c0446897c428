"""State: the snapshots with their expiry; add, edit (content and how long it lives) and
remove one, through the state layer under its document lock, with the fingerprint check."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from starlette.responses import Response

from ..layers.state import StateEntry
from .call import Call
from .web import PageError, changed_meanwhile, fingerprint


def state_print(entry: StateEntry | None) -> str:
    """The fingerprint of an entry as the page shows it (its content and its date)."""
    if entry is None:
        return fingerprint(None)
    return fingerprint(f"{entry.content}\x00{entry.updated}")


def _expires(entry: StateEntry, ttl: int) -> datetime | None:
    if entry.updated is None:
        return None
    day = entry.updated
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc) + timedelta(days=ttl)


def state(call: Call) -> Response:
    ttl = call.limits.state_ttl_days
    today = call.now().astimezone(timezone.utc).date()
    rows = [
        {
            "entry": entry,
            "expires": _expires(entry, ttl),
            "days_left": None if entry.updated is None else (entry.updated - today).days + ttl,
            "fingerprint": state_print(entry),
        }
        for entry in call.memory.state.entries()
    ]
    return call.page("state.html", rows=rows, ttl=ttl)


def _dated(call: Call, ttl: int) -> tuple[date | None, bool]:
    """The date the form asks for: ``never`` ticked → undated; else ``days`` (1 … ttl) left
    to live, the date being ``ttl - days`` days before today."""
    if call.form.get("never") == "yes":
        return None, True
    days = call.form.number("days", ttl, low=1)
    if days > ttl:
        raise PageError(
            400,
            "Too long",
            f"a state entry lives at most {ttl} days (Limits.state_ttl_days) after its date; "
            f"choose 1 to {ttl} days, or tick 'never expires'.",
        )
    today = call.now().astimezone(timezone.utc).date()
    return today - timedelta(days=ttl - days), False


def state_save(call: Call) -> Response:
    key = call.form.required("key", "the state key")
    content = call.form.required("content", "the content")
    ttl = call.limits.state_ttl_days
    day, undated = _dated(call, ttl)
    layer = call.memory.state
    with layer.documents.lock():
        current = layer.get(key)
        if state_print(current) != call.form.get("fingerprint"):
            raise changed_meanwhile(f"state entry {key!r}", "written")
        if current is not None and (current.content, current.updated) == (content.strip(), day):
            return call.done("state", f"{key!r} is unchanged; nothing was written")
        entry = layer.update(key, content, day=day, undated=undated)
    lives = "never expires" if entry.updated is None else f"dated {entry.updated}"
    return call.done("state", f"saved {key!r} ({lives})")


def state_clear(call: Call) -> Response:
    key = call.form.required("key", "the state key")
    layer = call.memory.state
    with layer.documents.lock():
        current = layer.get(key)
        if current is None:
            return call.done("state", f"{key!r} was already gone")
        if state_print(current) != call.form.get("fingerprint"):
            raise changed_meanwhile(f"state entry {key!r}", "removed")
        layer.clear(key)
    return call.done("state", f"removed {key!r}")


ROUTES = (
    ("/state", "state", state, False),
    ("/state/save", "state", state_save, True),
    ("/state/clear", "state", state_clear, True),
)
