"""knowledge.md hygiene after a dream (as the original's prune pass, with its bugs fixed: it
deduplicated headings of levels 1-3 across sections and its ``<think>`` stripping never fired).

Drops ``## daily-report-*`` sections, strips ``<think>…</think>`` blocks, drops a section only
when it repeats an earlier section's name *and* body (subheadings in different sections are
never deduplicated), and enforces the per-section and total caps on the curated part. Empty
observations are dropped where the document is edited (``apply``). Every change is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..config import Limits
from .plan import strip_think

Sections = list[tuple[str, str]]
Measure = Callable[[str, Sequence[tuple[str, str]]], int]


@dataclass(frozen=True)
class HygieneAction:
    """One change hygiene made, for the report and the audit."""

    kind: str  # daily-report, think, duplicate-section, section-cap, total-cap
    section: str | None
    detail: str


def rendered_curated_chars(preamble: str, sections: Sequence[tuple[str, str]]) -> int:
    """Characters of the curated part as written: preamble plus ``## name`` and body each."""
    return len(preamble.strip()) + sum(
        len(f"\n\n## {name}\n{body.strip()}") for name, body in sections
    )


def clean_curated(
    preamble: str,
    sections: Sequence[tuple[str, str]],
    limits: Limits,
    measure: Measure = rendered_curated_chars,
) -> tuple[str, Sections, list[HygieneAction]]:
    """The cleaned preamble and sections, and what was changed."""
    actions: list[HygieneAction] = []
    kept: Sections = []
    seen: set[tuple[str, str]] = set()
    cleaned_preamble = strip_think(preamble)
    if cleaned_preamble != preamble:
        actions.append(HygieneAction("think", None, "removed <think> blocks from the preamble"))
    for name, body in sections:
        if name.lower().startswith("daily-report-"):
            actions.append(HygieneAction("daily-report", name, "daily reports belong in logs"))
            continue
        cleaned = strip_think(body)
        if cleaned != body:
            actions.append(HygieneAction("think", name, "removed <think> blocks"))
        key = (name.strip().lower(), cleaned.strip())
        if key in seen:
            actions.append(HygieneAction("duplicate-section", name, "identical to an earlier one"))
            continue
        seen.add(key)
        kept.append((name, _cap_section(name, cleaned, limits.section_max_chars, actions)))
    _cap_total(cleaned_preamble, kept, limits.curated_max_chars, measure, actions)
    return cleaned_preamble, kept, actions


def cut_at_line(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` chars, at a line end when there is one."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    newline = head.rfind("\n")
    return (head[:newline] if newline > 0 else head).rstrip()


def _cap_section(name: str, body: str, limit: int, actions: list[HygieneAction]) -> str:
    stripped = body.strip()
    if len(stripped) <= limit:
        return body
    cut = cut_at_line(stripped, limit)
    actions.append(HygieneAction("section-cap", name, f"cut from {len(stripped)} to {len(cut)}"))
    return cut


def _cap_total(
    preamble: str, sections: Sections, limit: int, measure: Measure, actions: list[HygieneAction]
) -> None:
    """Shorten sections from the last one up until the curated part fits ``limit``."""
    for index in range(len(sections) - 1, -1, -1):
        excess = measure(preamble, sections) - limit
        if excess <= 0:
            return
        name, body = sections[index]
        stripped = body.strip()
        cut = cut_at_line(stripped, max(0, len(stripped) - excess))
        sections[index] = (name, cut)
        actions.append(HygieneAction("total-cap", name, f"cut from {len(stripped)} to {len(cut)}"))
