"""Observations on the Knowledge page: add one, edit one (content, type, tags), delete or
merge the ticked ones. Every write takes the document lock, checks that what the page showed
is still there unchanged, and goes through the knowledge layer (its caps and refusals)."""

from __future__ import annotations

from starlette.responses import Response

from ..config import OBSERVATION_TYPES
from ..layers._knowledge_format import new_observation_id
from ..layers.knowledge import Observation
from .call import Call
from .web import PageError, changed_meanwhile, fingerprint


def observation_print(obs: Observation) -> str:
    """The fingerprint of everything the edit form shows of ``obs``."""
    return fingerprint("\x00".join((obs.type, obs.content, ",".join(obs.tags))))


def _tags(call: Call) -> tuple[str, ...]:
    """The comma-separated tags field: trimmed, empty ones dropped, duplicates once."""
    return tuple(dict.fromkeys(t.strip() for t in call.form.get("tags").split(",") if t.strip()))


def observation_add(call: Call) -> Response:
    content = call.form.required("content", "the observation's text")
    kind = call.form.choice("type", OBSERVATION_TYPES) or "fact"
    obs = call.memory.knowledge.save_observation(content, kind, _tags(call))
    return call.done("knowledge", f"added {obs.id} ({obs.type})")


def _present(call: Call, obs_id: str) -> Observation:
    found = next((o for o in call.memory.knowledge.observations() if o.id == obs_id), None)
    if found is None:
        raise PageError(
            404, "No such observation", f"there is no observation {obs_id!r} (deleted or merged?)."
        )
    return found


def observation_form(call: Call) -> Response:
    obs = _present(call, call.request.path_params["obs"])
    return call.page(
        "observation.html",
        obs=obs,
        types=OBSERVATION_TYPES,
        print=observation_print(obs),
    )


def observation_save(call: Call) -> Response:
    """Replace an observation by its edited version: same id, dated now (it moves to the top
    of the timeline, as a merge does)."""
    obs_id = call.request.path_params["obs"]
    content = call.form.required("content", "the observation's text")
    kind = call.form.choice("type", OBSERVATION_TYPES) or "fact"
    tags = _tags(call)
    kf = call.memory.knowledge
    with kf.documents.lock():
        current = _present(call, obs_id)
        if observation_print(current) != call.form.get("fingerprint"):
            raise changed_meanwhile(f"observation {obs_id}", "written")
        if (current.content, current.type, current.tags) == (content.strip(), kind, tags):
            return call.done("knowledge", f"{obs_id} is unchanged; nothing was written")
        kf.replace_observations([obs_id], Observation(obs_id, kind, content, call.now(), tags))
    return call.done("knowledge", f"saved {obs_id}")


def _selected(call: Call) -> dict[str, str | None]:
    """The ticked observations: id → the fingerprint of the content the page showed (``id@fp``;
    a bare id, from a script, is not checked)."""
    picked: dict[str, str | None] = {}
    for value in call.form.all("id"):
        obs_id, at, seen = value.rpartition("@")
        picked[obs_id if at else seen] = seen if at else None
    return picked


def _changed(call: Call, picked: dict[str, str | None], verb: str) -> None:
    """Refuse (409, nothing written) when a ticked observation is gone or was edited since
    the page was loaded; call under the document lock."""
    present = {o.id: o for o in call.memory.knowledge.observations()}
    gone = [i for i in picked if i not in present]
    edited = [
        i
        for i, seen in picked.items()
        if i in present and seen is not None and seen != fingerprint(present[i].content)
    ]
    if gone or edited:
        parts = []
        if gone:
            parts.append(f"{', '.join(gone)} no longer exist (deleted or merged)")
        if edited:
            parts.append(f"{', '.join(edited)} changed")
        raise PageError(
            409,
            "Changed meanwhile",
            f"{' and '.join(parts)} since the page was loaded; nothing was {verb}. "
            "Reload and select again.",
        )


def observations_delete(call: Call) -> Response:
    picked = _selected(call)
    if not picked:
        raise PageError(400, "Nothing selected", "tick the observations to delete first.")
    kf = call.memory.knowledge
    with kf.documents.lock():
        _changed(call, picked, "deleted")
        removed = kf.remove_observations(list(picked))
    return call.done("knowledge", f"deleted {removed} observations")


def observations_merge(call: Call) -> Response:
    form = call.form
    picked = _selected(call)
    if len(picked) < 2:
        raise PageError(400, "Merge needs two", "tick at least two observations to merge.")
    kf = call.memory.knowledge
    with kf.documents.lock():
        _changed(call, picked, "merged")
        present = {o.id: o for o in kf.observations()}
        sources = [present[i] for i in picked]
        content = form.get("content").strip() or "\n".join(o.content for o in sources)
        kind = form.choice("type", OBSERVATION_TYPES) or sources[-1].type
        tags = tuple(dict.fromkeys(t for o in sources for t in o.tags))
        when = call.now()
        new = Observation(new_observation_id(when), kind, content, when, tags)
        merged = kf.replace_observations(list(picked), new)
    return call.done("knowledge", f"merged {len(picked)} observations into {merged.id}")


ROUTES = (
    ("/knowledge/observations/add", "knowledge", observation_add, True),
    ("/knowledge/observations/delete", "knowledge", observations_delete, True),
    ("/knowledge/observations/merge", "knowledge", observations_merge, True),
    ("/knowledge/observations/{obs}", "knowledge", observation_form, False),
    ("/knowledge/observations/{obs}/edit", "knowledge", observation_save, True),
)
