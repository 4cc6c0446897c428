"""markus-memory: persistent four-layer memory for LLM agents."""

from .config import Limits, Settings
from .errors import (
    BackendUnavailableError,
    BusyError,
    CorruptFileError,
    ExtraNotInstalledError,
    InvalidIdError,
    InvalidInputError,
    LLMError,
    LockTimeoutError,
    MarkusMemoryError,
    MigrationError,
    NotFoundError,
    StorageError,
)
from .memory import AgentMemory, open_agent
from .search.recall import ContextTurn, ConversationHit

__version__ = "0.1.0"

__all__ = [
    "AgentMemory",
    "BackendUnavailableError",
    "BusyError",
    "ContextTurn",
    "ConversationHit",
    "CorruptFileError",
    "ExtraNotInstalledError",
    "InvalidIdError",
    "InvalidInputError",
    "LLMError",
    "Limits",
    "LockTimeoutError",
    "MarkusMemoryError",
    "MigrationError",
    "NotFoundError",
    "Settings",
    "StorageError",
    "__version__",
    "open_agent",
]
