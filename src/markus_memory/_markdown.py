"""Markdown section parsing and rendering with reversible escaping, shared by the file layers.

The Markus files are line oriented: a line starting with ``## `` opens a section, ``### ``
opens an observation, and an exact ``<!-- name: value -->`` line carries metadata. Free text
written into such a file (an observation, a notebook entry, a state snapshot) could contain
those very lines, so :func:`escape_body` prefixes every line that starts with ``#``, ``<!--``
or a backslash with one backslash, and :func:`unescape_body` removes exactly that backslash.
``\\## x`` is also how CommonMark spells a literal ``## x``, so escaped files still read well.

Curated knowledge sections are different by contract: their bodies are *sanitised*
(``## `` → ``### ``, as the original's curated write does) rather than escaped, because their
subsections are meant to be shown to the model as headings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ESCAPE_PREFIXES = ("#", "<!--", "\\")
_META_LINE = re.compile(r"<!-- ([A-Za-z][\w-]*): (.*?) -->\r?\Z")
_H2_LINE = re.compile(r"## (.*\S.*)\Z", re.DOTALL)


def escape_line(line: str) -> str:
    return "\\" + line if line.startswith(_ESCAPE_PREFIXES) else line


def unescape_line(line: str) -> str:
    return line[1:] if line.startswith("\\") else line


def escape_body(text: str) -> str:
    """Make ``text`` safe to place under a heading: no line of it can be read as structure."""
    return "\n".join(escape_line(line) for line in text.split("\n"))


def unescape_body(text: str) -> str:
    """The exact inverse of :func:`escape_body`."""
    return "\n".join(unescape_line(line) for line in text.split("\n"))


def sanitize_h2(text: str) -> str:
    """Demote ``## `` line starts to ``### `` so a body cannot open a sibling section."""
    return "\n".join("#" + line if line.startswith("## ") else line for line in text.split("\n"))


def meta_line(line: str) -> tuple[str, str] | None:
    """``(name, value)`` when ``line`` is exactly a ``<!-- name: value -->`` comment."""
    match = _META_LINE.match(line)
    return (match.group(1), match.group(2)) if match else None


def render_meta(name: str, value: str) -> str:
    return f"<!-- {name}: {value} -->"


def h2_name(line: str) -> str | None:
    """The section name when ``line`` is a ``## name`` heading (a trailing CR is ignored)."""
    match = _H2_LINE.match(line.rstrip("\r"))
    return match.group(1).strip() if match else None


@dataclass(frozen=True)
class Section:
    """One ``## name`` section as written: its heading line and everything after it.

    ``tail`` starts with the newline that ends the heading line (it is empty only for a heading
    on the last line of a file without a final newline) and runs up to the next heading.
    """

    name: str
    heading: str
    tail: str

    @classmethod
    def build(cls, name: str, body: str) -> Section:
        """A new section ``## name`` whose body is ``body`` followed by one newline."""
        return cls(name, "## " + name, "\n" + body + "\n")

    @property
    def body(self) -> str:
        """The text under the heading, without the newline that ends the heading line."""
        return self.tail[1:] if self.tail.startswith("\n") else self.tail

    def render(self) -> str:
        return self.heading + self.tail


_H2_START = re.compile(r"^## ", re.MULTILINE)


def split_h2(text: str) -> tuple[str, list[Section]]:
    """Split ``text`` into its preamble and ``## `` sections, losslessly.

    :func:`join_h2` of the result rebuilds ``text`` exactly, whatever it contains.
    """
    starts = [m.start() for m in _H2_START.finditer(text) if _heading_at(text, m.start())]
    if not starts:
        return text, []
    sections = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(text)
        chunk = text[start:end]
        newline = chunk.find("\n")
        heading, tail = (chunk, "") if newline < 0 else (chunk[:newline], chunk[newline:])
        sections.append(Section(h2_name(heading) or "", heading, tail))
    return text[: starts[0]], sections


def _heading_at(text: str, start: int) -> bool:
    end = text.find("\n", start)
    return h2_name(text[start : None if end < 0 else end]) is not None


def join_h2(preamble: str, sections: list[Section]) -> str:
    """The inverse of :func:`split_h2`."""
    return preamble + "".join(s.render() for s in sections)
