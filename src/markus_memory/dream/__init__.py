"""The dream cycle: consolidation of the observation buffer into curated knowledge.

``dream(memory, llm=None, dry_run=False)`` runs one cycle (offline without a model);
``should_dream`` / ``dream_if_due`` apply the trigger policy; ``undo_last_dream``,
``dream_history`` and ``dream_diff`` read the audit log: in ``<home>/data.db``, or in
PostgreSQL when the documents live there (the backend seam decides).
"""

from ..storage.audit import SqliteAuditLog
from ..storage.dream_runs import AuditLog, DreamRun
from .cycle import dream, dream_if_due, should_dream
from .plan import Merge, Plan, Promotion, Rejection
from .report import DreamReport
from .trigger import TriggerDecision
from .undo import UndoResult, dream_diff, dream_history, undo_last_dream

__all__ = [
    "AuditLog",
    "DreamReport",
    "DreamRun",
    "Merge",
    "Plan",
    "Promotion",
    "Rejection",
    "SqliteAuditLog",
    "TriggerDecision",
    "UndoResult",
    "dream",
    "dream_diff",
    "dream_history",
    "dream_if_due",
    "should_dream",
    "undo_last_dream",
]
