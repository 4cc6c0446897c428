"""What a model's new text of a layer file becomes, decided before anything is written.

A model edits ``NOTEBOOK.md``, ``state.md`` or ``knowledge.md`` as text; the layers keep
structured entries. :func:`settle` turns the new text into the text the layer will store, or
refuses it, so that the tool never answers "edited" for text the layer would not keep:

- **Free lines** (outside any ``## key`` entry, not the file's ``# Notebook`` / ``# State``
  title) of NOTEBOOK.md and state.md become one entry each: ``label: value`` (a leading ``- ``,
  ``* `` or ``1. `` dropped) becomes ``## label`` (lower case, words joined by ``-``) holding
  ``value``; any other line becomes an entry keyed by its first words, holding the line. A key
  that exists already, or a free line that is itself a ``#`` heading, is refused.
- **knowledge.md**: text above the first ``## `` is its preamble and is kept; free lines under
  ``## _observations`` before its first ``### id`` become one new observation. The
  ``## _observations`` heading is protected (it cannot be renamed or removed), and an edit that
  would move ``### id`` lines out of the buffer (a ``## `` line below it) is refused.
- Last, every line the edit added must be found again in what the layer will hold (its keys,
  texts, metadata); if one is not, the edit is refused with the format to use.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime

from .._markdown import (
    Section,
    escape_body,
    join_h2,
    meta_line,
    render_meta,
    split_h2,
    unescape_line,
)
from ..layers._knowledge_format import (
    HEADER_COMMENTS,
    OBSERVATIONS,
    new_observation_id,
    parse_knowledge,
)
from ..layers.notebook import parse_notebook
from ..layers.state import parse_state_entry


class LayerRefusal(Exception):
    """A layer refused a write; ``str(exc)`` says why (for the model)."""


FORMATS = {
    "NOTEBOOK.md": (
        "NOTEBOOK.md holds entries, each a `## key` heading line followed by its text "
        "(e.g. `## current-task` then `write the report`); a line `label: text` written "
        "outside any entry becomes the entry `## label`"
    ),
    "state.md": (
        "state.md holds snapshots, each a `## key` heading line followed by its content "
        "(e.g. `## focus` then `waiting on review`); a line `key: value` written outside any "
        "section becomes the snapshot `## key`"
    ),
    "knowledge.md": (
        "knowledge.md holds curated sections (a `## name` heading and its text) above "
        "`## _observations`, the observation buffer, where each observation is a `### id` "
        "heading followed by its text; the `## _observations` heading must stay as it is"
    ),
}
TITLES = {"NOTEBOOK.md": "# Notebook", "state.md": "# State"}

_BULLET = re.compile(r"(?:[-*+]|\d{1,3}[.)])\s+")
_LABEL = re.compile(r"([^:]{1,60}?)\s*:(?:\s+(.*))?\Z")
_NOT_WORD = re.compile(r"[^\w]+")
_KEY_WORDS = 5
_KEY_CHARS = 60


def refuse(name: str, why: str) -> LayerRefusal:
    return LayerRefusal(f"{name} was not changed: {why}. Format: {FORMATS[name]}")


def settle(name: str, old: str, new: str, now: datetime) -> tuple[str, list[str]]:
    """The text the layer ``name`` should store for the model's ``new`` text (was ``old``),
    and notes for the model on what its free lines became; :class:`LayerRefusal` if refused."""
    if name == "knowledge.md":
        text, notes = _settle_knowledge(old, new, now)
    else:
        text, notes = _settle_entries(name, old, new)
    _check_kept(name, old, text)
    return text, notes


# -- notebook and state: free lines become entries ----------------------------------------------


def _settle_entries(name: str, old: str, new: str) -> tuple[str, list[str]]:
    preamble, sections = split_h2(new)
    names = Counter(s.name for s in sections)
    names_before = Counter(s.name for s in split_h2(old)[1])
    twice = sorted(key for key, n in names.items() if n > 1 and n > names_before[key])
    if twice:
        raise refuse(name, f"two entries are named `## {twice[0]}`; merge them into one")
    before = Counter(line.strip() for line in split_h2(old)[0].split("\n"))
    before[TITLES[name]] += 1
    free: list[str] = []
    for line in preamble.split("\n"):
        stripped = line.strip()
        if not stripped or meta_line(stripped) is not None:  # metadata of a removed heading
            continue
        if before[stripped] > 0:
            before[stripped] -= 1
            continue
        free.append(stripped)
    _refuse_empty(name, new)
    if not free:
        return new, []
    added, notes = [], []
    taken = set(names)
    for line in free:
        if line.startswith("#"):
            raise refuse(name, f"the heading `{line[:80]}` is outside any `## key` entry")
        key, text = _entry_of(line)
        if key in taken:
            raise refuse(
                name,
                f"the line `{line[:80]}` would become `## {key}`, which exists already; "
                "edit that entry under its heading instead",
            )
        taken.add(key)
        body = escape_body(text) if name == "NOTEBOOK.md" else text
        added.append(Section.build(key, body))
        notes.append(f"`{line[:80]}` became `## {key}`")
    kept = [_ends_line(s) for s in sections]
    return join_h2(TITLES[name] + "\n\n", [*kept, *added]), notes


def _refuse_empty(name: str, text: str) -> None:
    if name == "NOTEBOOK.md":
        doc = parse_notebook(text, datetime.now().astimezone())
        empty = [entry.key for entry in doc.entries if not entry.text]
    else:
        empty = [s.name for s in split_h2(text)[1] if not parse_state_entry(s).content]
    if empty:
        raise refuse(
            name,
            f"the entry `## {empty[0]}` has no text; write its text on the lines under the "
            "heading, or remove the heading",
        )


def _entry_of(line: str) -> tuple[str, str]:
    """The ``(key, text)`` of the entry a free line becomes."""
    plain = _BULLET.sub("", line, count=1) if _BULLET.match(line) else line
    label = _LABEL.match(plain)
    if label and label.group(2) and len(label.group(1).split()) <= 8:
        key = _slug(label.group(1))
        if key:
            return key, label.group(2).strip()
    key = _slug(" ".join(plain.split()[:_KEY_WORDS])) or "note"
    return key, plain


def _slug(words: str) -> str:
    return _NOT_WORD.sub("-", words.lower()).strip("-_")[:_KEY_CHARS].strip("-_")


def _ends_line(section: Section) -> Section:
    tail = section.tail if section.tail.endswith("\n") else section.tail + "\n"
    return Section(section.name, section.heading, tail)


# -- knowledge: the observation buffer is protected --------------------------------------------


def _settle_knowledge(old: str, new: str, now: datetime) -> tuple[str, list[str]]:
    name = "knowledge.md"
    had_buffer = any(s.name == OBSERVATIONS for s in split_h2(old)[1])
    preamble, sections = split_h2(new)
    at = [i for i, s in enumerate(sections) if s.name == OBSERVATIONS]
    if had_buffer and not at:
        raise refuse(name, "the `## _observations` heading is protected; keep it as it is")
    if not at:
        return new, []
    if len(at) > 1:
        raise refuse(name, "`## _observations` may appear only once")
    for section in sections[at[0] + 1 :]:
        if any(line.startswith("### ") for line in section.body.split("\n")):
            raise refuse(
                name,
                f"`## {section.name}` below `## _observations` would turn the observations "
                "after it into a curated section; put curated sections above `## _observations`",
            )
    buffer = sections[at[0]]
    lines = buffer.body.split("\n")
    ids, ids_before = Counter(_observation_ids(buffer.body)), Counter(_observation_ids(old))
    again = sorted(i for i, n in ids.items() if n > 1 and n > ids_before[i])
    if again:
        raise refuse(name, f"`### {again[0]}` is taken; give the new observation its own id")
    first = next((i for i, line in enumerate(lines) if line.startswith("### ")), len(lines))
    free = [line.strip() for line in lines[:first] if line.strip() not in ("", *HEADER_COMMENTS)]
    if not free:
        return new, []
    obs_id = new_observation_id(now)
    entry = [f"### {obs_id}", render_meta("type", "note"), escape_body("\n".join(free)), ""]
    header = [line for line in lines[:first] if line.strip() in HEADER_COMMENTS]
    rest = lines[first:]
    while rest and not rest[-1].strip():
        rest.pop()
    body = "\n".join([*header, "", *rest, *([""] if rest else []), *entry])
    sections[at[0]] = Section(buffer.name, buffer.heading, "\n" + body)
    note = f"the lines under `## _observations` became the observation `### {obs_id}`"
    return join_h2(preamble, sections), [note]


def _observation_ids(text: str) -> list[str]:
    return [
        line[4:].split()[0]
        for line in text.split("\n")
        if line[4:].split() and line.startswith("### ")
    ]


# -- the last check: nothing the edit added is dropped -----------------------------------------


def _check_kept(name: str, old: str, text: str) -> None:
    kept = _kept_lines(name, text)
    added = Counter(line.strip() for line in text.split("\n"))
    added.subtract(line.strip() for line in old.split("\n"))
    for line, count in added.items():
        if count <= 0 or not line or meta_line(line) is not None:
            continue
        if line in kept or unescape_line(line).strip() in kept:
            continue
        raise refuse(name, f"the line `{line[:80]}` would not be kept")


def _kept_lines(name: str, text: str) -> set[str]:
    """Every stripped line the layer ``name`` keeps of ``text``: headings and texts."""
    kept: set[str] = set(HEADER_COMMENTS) | set(TITLES.values())
    if name == "NOTEBOOK.md":
        doc = parse_notebook(text, datetime.now().astimezone())
        kept |= {line.strip() for line in doc.preamble.split("\n")}
        for entry in doc.entries:
            kept.add(f"## {entry.key}")
            kept |= {line.strip() for line in entry.text.split("\n")}
    elif name == "state.md":
        for section in split_h2(text)[1]:
            snapshot = parse_state_entry(section)
            if snapshot.content:
                kept.add(f"## {snapshot.key}")
                kept |= {line.strip() for line in snapshot.content.split("\n")}
    else:
        knowledge = parse_knowledge(text)
        kept |= {line.strip() for line in knowledge.preamble.split("\n")}
        kept.add(f"## {OBSERVATIONS}")
        for curated in knowledge.sections:
            kept.add(f"## {curated.name}")
            kept |= {line.strip() for line in curated.body.split("\n")}
        for obs in knowledge.observations:
            kept.add(f"### {obs.id}")
            kept |= {line.strip() for line in obs.content.split("\n")}
    kept.discard("")
    return kept
