"""The knowledge.md format: KnowledgeDoc, its parser/renderer (exact inverses), entry rules.

Layout (the original Markus format), as written here::

    # Knowledge                              <- preamble: anything before the first "## "

    ## <curated section>
    <body>

    ## _observations
    <!-- This section is the observation buffer. … -->
    <!-- Dream cycle consolidates … -->

    ### <observation id>
    <!-- type: <type>[, tags: <t1>, <t2>] -->
    <!-- at: <ISO> -->
    <content, escaped with _markdown.escape_body>

Differences from the original, each deliberate (each fixes a data-loss bug of the original):

* the observation's timestamp is persisted in an extra ``<!-- at: ISO -->`` line (the original dated
  most ids "now" at every load); a file
  without it still loads: ids like ``obs_<ms>_…`` give their time, others the caller's stable
  ``fallback`` time (the file's mtime), never "now at every load";
* observation content is escaped reversibly, so ``### x``, ``## x`` or ``<!-- type: … -->`` lines
  inside it round-trip (the original split them into bogus entries), and ``### <id>`` lines are
  recognised explicitly (the original misread a block without its header comments);
* sections found after ``## _observations`` (a person's hand edit) are curated sections: they are
  parsed into :attr:`KnowledgeDoc.sections` and rendered above the block (the original appended
  new sections after the block, where they vanished); a file that
  starts with ``## _observations`` has an empty curated part (the original injected
  the whole buffer as curated knowledge).

Curated bodies are kept as written, except that trailing white space is not part of a body: the
renderer owns the blank line between blocks. Bodies never hold ``## `` heading lines (writers
pass them through :func:`_markdown.sanitize_h2`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .._fs import MAX_ID_CHARS
from .._markdown import escape_body, meta_line, render_meta, split_h2, unescape_body
from ..config import OBSERVATION_TYPES as OBSERVATION_TYPES  # knowledge.py imports it from here
from ..config import epoch_ms, from_epoch_ms, iso_ms, parse_iso, rand36
from ..errors import InvalidInputError

OBSERVATIONS = "_observations"
HEADER_COMMENTS = (
    "<!-- This section is the observation buffer. Searched on-demand, NOT always injected "
    "into prompt. -->",
    "<!-- Dream cycle consolidates recurring patterns into curated sections above. -->",
)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

MAX_OBSERVATION_CHARS = 50_000
"""Longest observation content accepted (a bigger one belongs in a file, not in the buffer)."""

_TYPE_VALUE = re.compile(r"(\w+)(?:, tags: (.*))?\Z", re.DOTALL)
_ID_MS = re.compile(r"[A-Za-z]+_(\d{12,14})(?![0-9])")
_ID_DAY = re.compile(r"daily_report_(\d{4}-\d{2}-\d{2})\Z")
_BAD_TAG = re.compile(r",|-->|[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Observation:
    """One entry of the ``## _observations`` buffer."""

    id: str
    type: str
    content: str
    timestamp: datetime
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class CuratedSection:
    """One curated ``## name`` section; ``body`` is the text under the heading, right-stripped."""

    name: str
    body: str


@dataclass
class KnowledgeDoc:
    """The whole of knowledge.md: preamble, curated sections in order, observations in order."""

    preamble: str = ""
    sections: list[CuratedSection] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)

    def copy(self) -> KnowledgeDoc:
        return KnowledgeDoc(self.preamble, list(self.sections), list(self.observations))

    def section_index(self, name: str) -> int | None:
        """Index of the first section whose heading is exactly ``name`` (not a substring)."""
        for index, section in enumerate(self.sections):
            if section.name == name:
                return index
        return None


def new_observation_id(moment: datetime) -> str:
    """``obs_<ms>_<rand36(6)>``, the memory_save id format."""
    return f"obs_{epoch_ms(moment)}_{rand36(6)}"


def time_from_id(obs_id: str) -> datetime | None:
    """The time encoded in an id: ``obs_<ms>_…``, ``merged_<ms>_…``, ``daily_report_<day>``."""
    match = _ID_MS.match(obs_id)
    if match:
        return from_epoch_ms(int(match.group(1)))
    day = _ID_DAY.match(obs_id)
    return parse_iso(day.group(1)) if day else None


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be stored in a type line (None when it can)."""
    if not tag or tag != tag.strip():
        return "must be non-empty without surrounding white space"
    if _BAD_TAG.search(tag):
        return "must not contain a comma, '-->' or a control character (newline, tab …)"
    return None


def to_millis(moment: datetime) -> datetime:
    """``moment`` in UTC, cut to whole milliseconds (what the file keeps)."""
    utc = moment.astimezone(timezone.utc)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def check_text(what: str, text: str) -> str:
    """``text`` if it can be written as UTF-8 (no lone surrogates), else InvalidInputError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{what} is not valid Unicode ({exc.reason})") from None
    return text


def check_content(content: object) -> str:
    """Observation content, stripped; :class:`InvalidInputError` unless a non-empty string."""
    if not isinstance(content, str):
        raise InvalidInputError(
            f"observation content must be a string, got {type(content).__name__}; "
            "save one observation per call"
        )
    text = check_text("observation content", content).strip()
    if not text:
        raise InvalidInputError("observation content must be a non-empty string")
    if len(text) > MAX_OBSERVATION_CHARS:
        raise InvalidInputError(
            f"observation content has {len(text)} chars, over {MAX_OBSERVATION_CHARS}; "
            "save a summary instead"
        )
    return text


def check_tags(tags: object) -> tuple[str, ...]:
    """Tags stripped, empties dropped; a tag that cannot be stored is refused, not cleaned."""
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise InvalidInputError("tags must be a list of strings")
    checked = []
    for tag in tags:
        if not isinstance(tag, str):
            raise InvalidInputError(f"a tag must be a string, got {type(tag).__name__}")
        stripped = check_text("a tag", tag).strip()
        problem = tag_problem(stripped) if stripped else None
        if problem:
            raise InvalidInputError(f"tag {stripped[:40]!r} {problem}")
        if stripped:
            checked.append(stripped)
    return tuple(checked)


def check_id(obs_id: object) -> str:
    """An observation id: one token of 1-128 characters, no white space."""
    if not isinstance(obs_id, str) or not obs_id or len(obs_id) > MAX_ID_CHARS:
        raise InvalidInputError(f"observation id must be a string of 1-{MAX_ID_CHARS} chars")
    if len(obs_id.split()) != 1 or obs_id.split()[0] != obs_id:
        raise InvalidInputError(f"observation id {obs_id[:40]!r} must not contain white space")
    return check_text("observation id", obs_id)


def clean_tag(tag: str) -> str:
    """A storable form of ``tag``: commas and control characters become spaces, ``-->`` ``->``."""
    cleaned = re.sub(r"[,\x00-\x1f\x7f]", " ", tag).replace("-->", "->")
    return " ".join(cleaned.split())


def curated_text(doc: KnowledgeDoc) -> str:
    """The curated part as rendered: preamble and sections, without the observation block."""
    blocks = [doc.preamble + "\n"] if doc.preamble else []
    for section in doc.sections:
        body = section.body + "\n" if section.body else ""
        blocks.append(f"## {section.name}\n{body}")
    return "\n".join(blocks)


def curated_size(doc: KnowledgeDoc) -> int:
    """Characters of the curated part: what its cap counts and every report shows."""
    return len(curated_text(doc).rstrip())


def _render_entry(obs: Observation) -> str:
    """One observation as written, ending with its blank line."""
    meta = obs.type + (", tags: " + ", ".join(obs.tags) if obs.tags else "")
    head = f"### {obs.id}\n{render_meta('type', meta)}\n{render_meta('at', iso_ms(obs.timestamp))}"
    return f"{head}\n{escape_body(obs.content)}\n\n"


Memo = dict[int, tuple[Observation, str]]
"""Rendered entries by ``id()`` of their immutable Observation, kept by a caller across renders."""


def render_observations(observations: list[Observation], memo: Memo | None = None) -> str:
    old = memo if memo is not None else {}
    new: Memo = {}
    parts = ["\n".join(["## " + OBSERVATIONS, *HEADER_COMMENTS, "", ""])]
    for obs in observations:
        hit = old.get(id(obs))
        text = hit[1] if hit is not None and hit[0] is obs else _render_entry(obs)
        new[id(obs)] = (obs, text)
        parts.append(text)
    if memo is not None:
        memo.clear()
        memo.update(new)
    return "".join(parts)[:-1]


def render_knowledge(doc: KnowledgeDoc, memo: Memo | None = None) -> str:
    """The text of knowledge.md for ``doc``; :func:`parse_knowledge` gives ``doc`` back.

    ``memo`` (optional, owned by the caller) makes re-rendering unchanged observations free.
    """
    curated = curated_text(doc)
    if not doc.observations:
        return curated
    return curated + ("\n" if curated else "") + render_observations(doc.observations, memo)


def parse_knowledge(text: str, fallback: datetime = EPOCH) -> KnowledgeDoc:
    """Parse any text as knowledge.md (never fails).

    ``fallback`` is the time of observations whose file has no ``at`` line and whose id encodes
    no time; pass something stable (the file's mtime), so repeated loads agree.
    """
    preamble, raw_sections = split_h2(text)
    doc = KnowledgeDoc(preamble.rstrip())
    for raw in raw_sections:
        if raw.name == OBSERVATIONS:
            doc.observations.extend(_parse_observations(raw.body, fallback))
        else:
            doc.sections.append(CuratedSection(raw.name, raw.body.rstrip()))
    return doc


def _parse_observations(block: str, fallback: datetime) -> list[Observation]:
    found: list[Observation] = []
    current: list[str] | None = None
    for line in [*block.split("\n"), "### "]:
        token = line[4:].split(maxsplit=1) if line.startswith("### ") else None
        if token is None:
            if current is not None:
                current.append(line)
            continue
        if current is not None:
            obs = _parse_entry(current, fallback)
            if obs is not None:
                found.append(obs)
        current = [token[0]] if token else None
    return found


def _parse_entry(chunk: list[str], fallback: datetime) -> Observation | None:
    obs_id, kind, moment = chunk[0], "note", None
    tags: tuple[str, ...] = ()
    content: list[str] = []
    for line in chunk[1:]:
        meta = meta_line(line)
        match = _TYPE_VALUE.match(meta[1]) if meta and meta[0] == "type" else None
        if match:
            kind = match.group(1) if match.group(1) in OBSERVATION_TYPES else "note"
            raw_tags = (match.group(2) or "").split(",")
            tags = tuple(t.strip() for t in raw_tags if t.strip())
        elif meta and meta[0] == "at":
            moment = parse_iso(meta[1]) or moment
        else:
            content.append(line)
    body = unescape_body("\n".join(content).strip()).strip()
    if not body:
        return None
    when = moment or time_from_id(obs_id) or fallback
    return Observation(obs_id, kind, body, when, tags)
