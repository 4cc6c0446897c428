import dataclasses

import markus_memory

EXPECTED = {
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
}


def test_public_api_is_exactly_the_documented_names() -> None:
    assert set(markus_memory.__all__) == EXPECTED
    assert markus_memory.__all__ == sorted(markus_memory.__all__, key=str)


def test_every_exported_name_exists() -> None:
    for name in markus_memory.__all__:
        assert hasattr(markus_memory, name), name


RESULT_TYPES = {
    "AppendedMessage",
    "CompactResult",
    "ContextTurn",
    "ConversationHit",
    "CuratedSection",
    "DailyLogEntry",
    "NotebookEntry",
    "Observation",
    "Role",
    "SearchHit",
    "SearchResult",
    "Session",
    "SessionInfo",
    "StateEntry",
    "UpsertResult",
    "WriteResult",
}


def test_exported_result_types_are_frozen_dataclasses() -> None:
    assert RESULT_TYPES <= EXPECTED
    for name in RESULT_TYPES:
        cls = getattr(markus_memory, name)
        assert dataclasses.is_dataclass(cls), name
        assert cls.__dataclass_params__.frozen, name
