import markus_memory

EXPECTED = {
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
}


def test_public_api_is_exactly_the_documented_names() -> None:
    assert set(markus_memory.__all__) == EXPECTED
    assert markus_memory.__all__ == sorted(markus_memory.__all__, key=str)


def test_every_exported_name_exists() -> None:
    for name in markus_memory.__all__:
        assert hasattr(markus_memory, name), name
