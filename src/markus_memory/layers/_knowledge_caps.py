"""What a knowledge.md write may store: the curated caps, section names and new observations.

The caps apply to the curated part only. A curated write that would leave a section body over
``Limits.section_max_chars`` or the curated part over ``Limits.curated_max_chars`` is *refused*
(:class:`WriteResult` with ``ok == False`` and a reason written for the model); nothing is
truncated. Everything here is pure: the file, its lock and its cache are :mod:`.knowledge`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .._fs import validate_key
from .._markdown import sanitize_h2
from ..config import Clock, Limits
from ..errors import InvalidInputError
from ._knowledge_format import (
    OBSERVATION_TYPES,
    OBSERVATIONS,
    CuratedSection,
    KnowledgeDoc,
    Observation,
    check_content,
    check_id,
    check_tags,
    check_text,
    clean_tag,
    curated_size,
    new_observation_id,
    to_millis,
)


@dataclass(frozen=True)
class WriteResult:
    """Outcome of a curated write. On refusal the sizes are those the write *would* have made.

    ``note`` says what was stored differently from what was given (``## `` lines demoted).
    """

    ok: bool
    reason: str | None = None
    section: str | None = None
    section_chars: int = 0
    section_limit: int = 0
    curated_chars: int = 0
    curated_limit: int = 0
    note: str | None = None


class Refused(Exception):
    """A cap refused the write; unwinds :meth:`.knowledge.KnowledgeFile._write` before it writes."""

    def __init__(self, result: WriteResult) -> None:
        super().__init__(result.reason)
        self.result = result


def check_section_name(name: object) -> str:
    checked = check_text("section name", validate_key("section name", name))
    if checked == OBSERVATIONS:
        raise InvalidInputError("'_observations' is the observation buffer, not a section name")
    return checked


def new_observation(
    content: object, type: object, tags: object, obs_id: object, moment: object, clock: Clock
) -> Observation:
    """A checked observation (an unknown type becomes ``note``; no moment: ``clock()``)."""
    text = check_content(content)
    kind = type if isinstance(type, str) and type in OBSERVATION_TYPES else "note"
    if moment is not None and not isinstance(moment, datetime):
        raise InvalidInputError("timestamp must be a datetime")
    when = to_millis(moment if moment is not None else clock())
    checked_id = new_observation_id(when) if obs_id is None else check_id(obs_id)
    return Observation(checked_id, kind, text, when, check_tags(tags))


def imported_observation(obs: Observation) -> Observation | None:
    """``obs`` as a bulk import stores it: tags and invalid Unicode cleaned instead of refused;
    None for empty content."""
    content = _valid_unicode(obs.content).strip() if isinstance(obs.content, str) else ""
    if not content:
        return None
    tags = tuple(t for t in (clean_tag(_valid_unicode(str(tag))) for tag in obs.tags) if t)
    kind = obs.type if obs.type in OBSERVATION_TYPES else "note"
    return Observation(check_id(obs.id), kind, content, to_millis(obs.timestamp), tags)


def measure(limits: Limits, section: str, body_chars: int, after: int, before: int) -> WriteResult:
    """Check the caps for a write that leaves ``section`` at ``body_chars`` and the curated
    part at ``after`` chars (``before`` now). Growing past a cap is refused; a curated part
    that was already over (a hand edit) may still shrink.
    """
    reason = None
    if body_chars > limits.section_max_chars:
        reason = (
            f"Section {section!r} would have {body_chars} chars, over its limit of "
            f"{limits.section_max_chars}; nothing was written. Shorten the content (keep "
            "the essentials), patch in less text, or save details with memory_save."
        )
    elif after > limits.curated_max_chars and after > before:
        reason = (
            f"knowledge.md curated sections would total {after} chars, over the limit of "
            f"{limits.curated_max_chars} (now {before}); nothing was written. Condense or "
            "remove other sections with memory_update mode 'replace', patch in less text, or "
            "save this with memory_save (observations do not count toward this limit)."
        )
    return WriteResult(
        ok=reason is None,
        reason=reason,
        section=section,
        section_chars=body_chars,
        section_limit=limits.section_max_chars,
        curated_chars=after,
        curated_limit=limits.curated_max_chars,
    )


def validated(
    original: KnowledgeDoc, doc: KnowledgeDoc, limits: Limits, clock: Clock
) -> KnowledgeDoc:
    """``doc`` (changed from ``original`` in a transaction) as it may be stored: bodies
    sanitised, names and observations checked; :class:`InvalidInputError` for a changed
    section over its cap or a curated part grown past its cap."""
    old_bodies = {s.name: s.body for s in original.sections}
    sections = [
        CuratedSection(check_section_name(s.name), sanitize_h2(s.body).strip("\n").rstrip())
        for s in doc.sections
    ]
    checked = KnowledgeDoc(sanitize_h2(doc.preamble).rstrip(), sections)
    checked.observations = [
        new_observation(o.content, o.type, o.tags, o.id, o.timestamp, clock)
        for o in doc.observations
    ]
    before, after = curated_size(original), curated_size(checked)
    for section in sections:
        changed = old_bodies.get(section.name) != section.body
        result = measure(limits, section.name, len(section.body), after, before)
        if changed and not result.ok:
            raise InvalidInputError(result.reason)
    result = measure(limits, "", 0, after, before)
    if not result.ok:
        raise InvalidInputError(result.reason)
    return checked


def demoted_note(content: str) -> str | None:
    """What a write says when ``## `` lines of ``content`` were stored as ``### ``."""
    count = sum(1 for line in content.split("\n") if line.startswith("## "))
    if not count:
        return None
    lines = "1 line" if count == 1 else f"{count} lines"
    return (
        f"{lines} starting with '## ' stored as '### ' (a '## ' line would start a new "
        "section of knowledge.md)"
    )


def _valid_unicode(text: str) -> str:
    """``text`` with lone surrogates replaced, so that it can be written as UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")
