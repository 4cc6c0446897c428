"""The dream plan: its schema, parsing a model reply, and validation piece by piece with reasons.

A reply is never trusted. Each part (one removal, one merge group, one promotion) is accepted
or rejected as a whole, with a reason; a rejected part changes nothing. The caps are those of
the original's plan validation plus the rules the original left to the prompt: promotion needs
3+ sources, an id may be used by one part only, and a merge must keep its sources' content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._markdown import sanitize_h2
from ..config import Limits

DEFAULT_MERGE_TAGS = ("consolidated",)
MAX_SECTION_NAME_CHARS = 100
MIN_MERGE_COVERAGE = 0.5
_THINK = re.compile(r"<think>.*?</think>[ \t]*\n?", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"\w+")
_CONTROL = re.compile(r"[,\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Merge:
    """Replace the observations ``remove_ids`` with one new observation holding ``content``.

    ``tags`` are the model's; the applied entry carries them plus every source's tags.
    """

    remove_ids: tuple[str, ...]
    content: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Promotion:
    """Append ``content`` to the curated section ``section``; then drop ``source_ids``."""

    source_ids: tuple[str, ...]
    section: str
    content: str


@dataclass(frozen=True)
class Plan:
    """What one dream cycle does to the observation buffer and the curated sections."""

    remove: tuple[str, ...] = ()
    merge: tuple[Merge, ...] = ()
    promote: tuple[Promotion, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.remove or self.merge or self.promote)

    def named_ids(self) -> set[str]:
        """Every observation id this plan may delete."""
        ids = set(self.remove)
        for group in self.merge:
            ids.update(group.remove_ids)
        for promotion in self.promote:
            ids.update(promotion.source_ids)
        return ids


@dataclass(frozen=True)
class Rejection:
    """One part of a reply that was not applied, and why."""

    part: str  # "reply", "remove", "merge" or "promote"
    index: int | None
    reason: str
    ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckedPlan:
    """A validated plan and the parts of the reply that were rejected."""

    plan: Plan
    rejections: tuple[Rejection, ...] = field(default_factory=tuple)
    failure: str | None = None  # set when the reply as a whole was unusable


def strip_think(text: str) -> str:
    """Remove ``<think>…</think>`` blocks (leaked model reasoning)."""
    return _THINK.sub("", text)


def extract_json(reply: str) -> Any:
    """The JSON object in a model reply: the whole reply, a fenced block, or first ``{``…last ``}``.

    Raises ValueError with a short reason when there is none.
    """
    text = strip_think(reply).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    candidates = [text]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    if start < 0 or end <= start:
        raise ValueError("the reply contains no JSON object")
    raise ValueError("the reply's JSON does not parse")


def parse_reply(reply: str, contents: Mapping[str, str], limits: Limits) -> CheckedPlan:
    """Parse and validate a model reply against the batch (``id → content``)."""
    try:
        raw = extract_json(reply)
    except ValueError as exc:
        return CheckedPlan(Plan(), (Rejection("reply", None, str(exc)),), str(exc))
    return validate_plan(raw, contents, limits)


def validate_plan(raw: Any, contents: Mapping[str, str], limits: Limits) -> CheckedPlan:
    """Validate a decoded reply against the batch; every rule failure becomes a Rejection."""
    if not isinstance(raw, Mapping):
        reason = "the reply is not a JSON object"
        return CheckedPlan(Plan(), (Rejection("reply", None, reason),), reason)
    checker = _Checker(contents, limits)
    for key in raw:
        if key not in ("remove", "merge", "promote"):
            checker.reject("reply", None, f"unknown key {key!r} ignored")
    remove = checker.removals(_list(raw, "remove", checker))
    merge = checker.merges(_list(raw, "merge", checker))
    promote = checker.promotions(_list(raw, "promote", checker))
    return CheckedPlan(Plan(remove, merge, promote), tuple(checker.rejections))


def _list(raw: Mapping[str, Any], key: str, checker: _Checker) -> list[Any]:
    value = raw.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        checker.reject(key, None, f"{key!r} must be a list, got {type(value).__name__}")
        return []
    return value


def tokens(text: str, min_chars: int = 3) -> set[str]:
    """Lower-case words of ``min_chars``+ characters, and character bigrams of CJK runs."""
    found: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word):
            found.update(word[i : i + 2] for i in range(max(1, len(word) - 1)))
        elif len(word) >= min_chars:
            found.add(word)
    return found


def coverage(source: str, merged: str) -> float:
    """The share of ``source``'s words that ``merged`` still has (1.0 for a wordless source)."""
    words = tokens(source)
    return 1.0 if not words else len(words & tokens(merged)) / len(words)


def clean_content(text: str) -> str:
    """Model-written content as it may be stored: no think blocks, no ``## `` lines, stripped."""
    return sanitize_h2(strip_think(text).strip())


class _Checker:
    def __init__(self, contents: Mapping[str, str], limits: Limits) -> None:
        self.contents = contents
        self.limits = limits
        self.rejections: list[Rejection] = []
        self.claimed: dict[str, str] = {}

    def reject(self, part: str, index: int | None, reason: str, ids: Iterable[str] = ()) -> None:
        self.rejections.append(Rejection(part, index, reason, tuple(ids)))

    def _ids(self, part: str, index: int, value: Any, minimum: int) -> tuple[str, ...] | None:
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            self.reject(part, index, "ids must be a list of strings")
            return None
        ids = tuple(dict.fromkeys(value))
        unknown = [i for i in ids if i not in self.contents]
        if unknown:
            self.reject(part, index, f"unknown ids {unknown[:5]}", ids)
            return None
        taken = [f"{i} (already in {self.claimed[i]})" for i in ids if i in self.claimed]
        if taken:
            self.reject(part, index, f"ids used twice: {taken[:5]}", ids)
            return None
        if len(ids) < minimum:
            self.reject(part, index, f"needs at least {minimum} distinct ids, got {len(ids)}", ids)
            return None
        return ids

    def _claim(self, ids: Collection[str], where: str) -> None:
        for i in ids:
            self.claimed[i] = where

    def _text(self, part: str, index: int, value: Any, what: str) -> str | None:
        if not isinstance(value, str) or not clean_content(value):
            self.reject(part, index, f"{what} must be a non-empty string")
            return None
        text = clean_content(value)
        if len(text) > self.limits.section_max_chars:
            self.reject(
                part,
                index,
                f"{what} is {len(text)} chars (limit {self.limits.section_max_chars})",
            )
            return None
        return text

    def removals(self, items: list[Any]) -> tuple[str, ...]:
        # Never let one cycle empty the buffer: at most half the batch is removed outright.
        cap = min(self.limits.dream_max_remove, len(self.contents) // 2)
        accepted: list[str] = []
        for index, item in enumerate(items):
            ids = self._ids("remove", index, [item], 1)
            if ids is None:
                continue
            if len(accepted) >= cap:
                self.reject("remove", index, f"over the per-cycle removal cap of {cap}", ids)
                continue
            self._claim(ids, f"remove[{index}]")
            accepted.append(ids[0])
        return tuple(accepted)

    def merges(self, items: list[Any]) -> tuple[Merge, ...]:
        accepted: list[Merge] = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                self.reject("merge", index, "a merge group must be an object")
                continue
            if len(accepted) >= self.limits.dream_max_merge:
                cap = self.limits.dream_max_merge
                self.reject("merge", index, f"over the per-cycle merge cap of {cap}")
                continue
            ids = self._ids("merge", index, item.get("removeIds"), 2)
            text = self._text("merge", index, item.get("mergedContent"), "mergedContent")
            if ids is None or text is None:
                continue
            lost = [i for i in ids if coverage(self.contents[i], text) < MIN_MERGE_COVERAGE]
            if lost:
                self.reject("merge", index, f"merged content drops most of {lost[:5]}", ids)
                continue
            tags = _tags(item.get("tags"))
            if tags is None:
                self.reject("merge", index, "tags must be a list of strings", ids)
                continue
            self._claim(ids, f"merge[{index}]")
            accepted.append(Merge(ids, text, tags))
        return tuple(accepted)

    def promotions(self, items: list[Any]) -> tuple[Promotion, ...]:
        accepted: list[Promotion] = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                self.reject("promote", index, "a promotion must be an object")
                continue
            if len(accepted) >= self.limits.dream_max_promote:
                cap = self.limits.dream_max_promote
                self.reject("promote", index, f"over the per-cycle promotion cap of {cap}")
                continue
            minimum = self.limits.dream_min_promote_sources
            ids = self._ids("promote", index, item.get("sourceIds"), minimum)
            section = self._section(index, item.get("section"))
            text = self._text("promote", index, item.get("content"), "content")
            if ids is None or section is None or text is None:
                continue
            self._claim(ids, f"promote[{index}]")
            accepted.append(Promotion(ids, section, text))
        return tuple(accepted)

    def _section(self, index: int, value: Any) -> str | None:
        name = " ".join(value.split()) if isinstance(value, str) else ""
        if not name:
            self.reject("promote", index, "section must be a non-empty string")
        elif len(name) > MAX_SECTION_NAME_CHARS:
            self.reject("promote", index, f"section name over {MAX_SECTION_NAME_CHARS} chars")
        elif any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
            self.reject("promote", index, "section name contains a control character")
        elif name.startswith(("_", "#")) or name.lower().startswith("daily-report-"):
            self.reject("promote", index, f"section {name!r} is reserved")
        else:
            return name
        return None


def _tags(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        return None
    cleaned = (" ".join(_CONTROL.sub(" ", t).replace("-->", "->").split()) for t in value)
    return tuple(dict.fromkeys(t for t in cleaned if t))
