"""Per-conversation and per-category tables, and the leave-one-conversation-out knob check.

``Result`` rows are (conversation, category, ranked dia_ids, evidence). A knob is checked by
tuning it on all conversations but one (the value with the best recall_any@10 +
recall_all@10 there) and scoring that value on the conversation left out; a knob generalises
when the left-out scores do not fall below the default's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from _locomo_data import CATEGORIES

Result = tuple[str, int, Sequence[str], set[str]]


def all_found(row: Result, k: int = 10) -> bool:
    """Whether every evidence turn of ``row`` is in its first ``k``."""
    return row[3] <= set(row[2][:k])


def recall(results: Sequence[Result], k: int = 10) -> tuple[float, float, int]:
    """(recall_any@k, recall_all@k, scored questions) over the results that have evidence."""
    rows = [row for row in results if row[3]]
    if not rows:
        return 0.0, 0.0, 0
    any_k = sum(bool(set(row[2][:k]) & row[3]) for row in rows) / len(rows)
    all_k = sum(all_found(row, k) for row in rows) / len(rows)
    return any_k, all_k, len(rows)


def breakdown(results: Sequence[Result]) -> list[tuple[str, float, float, int]]:
    """Rows (label, any@10, all@10, n): each conversation, each category, then all."""
    rows = []
    for conv in sorted({r[0] for r in results}):
        rows.append((conv, *recall([r for r in results if r[0] == conv])))
    for category, name in CATEGORIES.items():
        rows.append((name, *recall([r for r in results if r[1] == category])))
    rows.append(("all", *recall(results)))
    return rows


def format_breakdown(columns: dict[str, Sequence[Result]]) -> str:
    """One table: a row per conversation and category, two columns (any/all@10) per run."""
    names = list(columns)
    tables = {name: breakdown(columns[name]) for name in names}
    labels = [row[0] for row in tables[names[0]]]
    head = f"{'@10':<12}{'n':>5}" + "".join(f"{name[:15]:>16}{'':>8}" for name in names)
    sub = f"{'':<17}" + "".join(f"{'any':>16}{'all':>8}" for _ in names)
    lines = [head, sub]
    for i, label in enumerate(labels):
        count = tables[names[0]][i][3]
        cells = "".join(f"{tables[n][i][1]:>16.3f}{tables[n][i][2]:>8.3f}" for n in names)
        lines.append(f"{label:<12}{count:>5}{cells}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Fold:
    held_out: str
    chosen: object
    any10: float
    all10: float
    default_any10: float
    default_all10: float
    questions: int


def leave_one_out(
    conversations: Sequence[str],
    values: Sequence[object],
    default: object,
    score: Callable[[object], Sequence[Result]],
) -> list[Fold]:
    """For each conversation: the value best on the others, scored on it (vs ``default``)."""
    by_value = {repr(v): list(score(v)) for v in values}
    base = list(score(default)) if repr(default) not in by_value else by_value[repr(default)]
    folds = []
    for held in conversations:

        def objective(value: object, held: str = held) -> float:
            any_k, all_k, _ = recall([r for r in by_value[repr(value)] if r[0] != held])
            return any_k + all_k

        chosen = max(values, key=objective)
        any_k, all_k, count = recall([r for r in by_value[repr(chosen)] if r[0] == held])
        d_any, d_all, _ = recall([r for r in base if r[0] == held])
        folds.append(Fold(held, chosen, any_k, all_k, d_any, d_all, count))
    return folds


def format_folds(knob: str, folds: Sequence[Fold]) -> str:
    lines = [f"LOO {knob}: held-out  chosen  any@10 (off)  all@10 (off)"]
    for f in folds:
        lines.append(
            f"  {f.held_out:<8} {f.chosen!s:>8}  {f.any10:.3f} ({f.default_any10:.3f})"
            f"  {f.all10:.3f} ({f.default_all10:.3f})"
        )
    total = sum(f.questions for f in folds) or 1

    def pooled(attr: str) -> float:
        return sum(getattr(f, attr) * f.questions for f in folds) / total

    lines.append(
        f"  {'pooled':<8} {'':>8}  {pooled('any10'):.3f} ({pooled('default_any10'):.3f})"
        f"  {pooled('all10'):.3f} ({pooled('default_all10'):.3f})"
    )
    return "\n".join(lines)
