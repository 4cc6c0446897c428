import dataclasses
import importlib
import pkgutil
import types

import pytest

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
    "HistoryInfo",
    "HistoryItem",
    "HistoryRecord",
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


def test_the_tree_in_errors_names_every_error_class_each_exported() -> None:
    """The tree drawn in errors.py's docstring is the truth about the exception classes: each
    class is drawn under its parent, and the package exports every one."""
    import inspect
    import re

    from markus_memory import errors

    classes = {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and issubclass(cls, errors.MarkusMemoryError)
    }
    drawn: dict[str, str | None] = {}
    parents: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        found = re.match(r"^    ((?:[│ ]   )*)(?:[├└]── )?([A-Z]\w+Error)\b", line)
        if found is None:
            continue
        depth = len(found.group(1)) // 4 + (1 if "──" in line else 0)
        parents[depth:] = [found.group(2)]
        drawn[found.group(2)] = parents[depth - 1] if depth else None
    assert set(drawn) == set(classes), "errors.py's tree and its classes differ"
    for name, parent in drawn.items():
        if parent is not None:
            assert classes[parent] in classes[name].__bases__, f"{name} is not under {parent}"
        assert name in markus_memory.__all__, f"{name} is not exported"


def _packages() -> list[types.ModuleType]:
    found = [markus_memory]
    for info in pkgutil.walk_packages(markus_memory.__path__, "markus_memory."):
        if info.ispkg:
            found.append(importlib.import_module(info.name))
    return found


@pytest.mark.parametrize("package", _packages(), ids=lambda p: p.__name__)
def test_every_package_exports_exactly_what_it_defines(package: types.ModuleType) -> None:
    """As httpx's test_exported_members: a name a package defines (itself or in its private
    modules) and binds without an underscore is in its ``__all__``, and every name there
    exists; a package with nothing of its own to export binds none."""
    name = package.__name__
    own = {
        attr
        for attr, value in vars(package).items()
        if not attr.startswith("_")
        and not isinstance(value, types.ModuleType)
        and str(getattr(value, "__module__", "")).startswith(name)
    }
    exported = list(getattr(package, "__all__", []))
    assert own <= set(exported), f"{name} binds {sorted(own - set(exported))} outside __all__"
    assert all(hasattr(package, attr) for attr in exported), name
    assert len(exported) == len(set(exported)), name
