"""markus-memory: persistent four-layer memory for LLM agents."""

from .config import Limits, Settings
from .errors import (
    BackendUnavailableError,
    BusyError,
    ClosedError,
    CorruptFileError,
    DatabaseMissingError,
    ExtraNotInstalledError,
    InvalidIdError,
    InvalidInputError,
    LLMError,
    LockTimeoutError,
    LoginRefusedError,
    MarkusMemoryError,
    MigrationError,
    NotFoundError,
    RefusedError,
    SchemaMissingError,
    StorageError,
    SymlinkError,
    UnwritableError,
)
from .layers.daily_log import DailyLogEntry
from .layers.histories import HistoryInfo, HistoryItem, HistoryRecord
from .layers.knowledge import CuratedSection, Observation, WriteResult
from .layers.notebook import NotebookEntry, UpsertResult
from .layers.procedural import Role
from .layers.sessions import AppendedMessage, CompactResult, Session, SessionInfo
from .layers.state import StateEntry
from .memory import AgentMemory, open_agent
from .search.corpus import SearchHit
from .search.embedders import Embedder, MiniLMEmbedder
from .search.memory_search import SearchResult
from .search.recall import ContextTurn, ConversationHit

__version__ = "0.1.0"

__all__ = [
    "AgentMemory",
    "AppendedMessage",
    "BackendUnavailableError",
    "BusyError",
    "ClosedError",
    "CompactResult",
    "ContextTurn",
    "ConversationHit",
    "CorruptFileError",
    "CuratedSection",
    "DailyLogEntry",
    "DatabaseMissingError",
    "Embedder",
    "ExtraNotInstalledError",
    "HistoryInfo",
    "HistoryItem",
    "HistoryRecord",
    "InvalidIdError",
    "InvalidInputError",
    "LLMError",
    "Limits",
    "LockTimeoutError",
    "LoginRefusedError",
    "MarkusMemoryError",
    "MigrationError",
    "MiniLMEmbedder",
    "NotFoundError",
    "NotebookEntry",
    "Observation",
    "RefusedError",
    "Role",
    "SchemaMissingError",
    "SearchHit",
    "SearchResult",
    "Session",
    "SessionInfo",
    "Settings",
    "StateEntry",
    "StorageError",
    "SymlinkError",
    "UnwritableError",
    "UpsertResult",
    "WriteResult",
    "__version__",
    "open_agent",
]
