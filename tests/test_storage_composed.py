"""Storage's repositories hold their database instead of being one (issue #26): no class under
``storage/`` mixes several implementations in (``SqliteStore`` inherited a database and seven
mixins that talked through ``self``), nothing but a database class descends from one, and each
repository of an opened store holds the store's one database."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from pathlib import Path

import markus_memory.storage as storage
from markus_memory.storage._postgres.conn import PostgresDatabase
from markus_memory.storage._sqlite.conn import SqliteDatabase
from markus_memory.storage._sqlite.store import SqliteStore

DATABASES = (SqliteDatabase, PostgresDatabase)
REPOSITORIES = ("activities", "mailbox", "chats", "transcripts", "conversations", "daily_logs")


def storage_classes() -> list[type]:
    """Every class defined in a module of ``markus_memory.storage`` (imported here)."""
    found = []
    for info in pkgutil.walk_packages(storage.__path__, storage.__name__ + "."):
        module = importlib.import_module(info.name)
        found += [
            c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == info.name
        ]
    return found


def concrete_bases(cls: type) -> list[type]:
    """The bases of ``cls`` that bring an implementation (not ``object``, protocols, Generic)."""
    return [
        base
        for base in cls.__bases__
        if base is not object
        and base is not typing.Generic
        and not getattr(base, "_is_protocol", False)
    ]


def test_the_check_tells_a_mixed_in_implementation_from_a_protocol() -> None:
    class Reads:
        pass

    class Writes:
        pass

    class Contract(typing.Protocol):
        pass

    class Both(Contract, typing.Protocol):
        pass

    class Mixed(Reads, Writes):
        pass

    class Implements(Reads, Contract):
        pass

    assert concrete_bases(Mixed) == [Reads, Writes]
    assert concrete_bases(Implements) == [Reads]
    assert concrete_bases(Both) == []


def test_no_storage_class_inherits_more_than_one_implementation() -> None:
    classes = storage_classes()
    assert SqliteStore in classes and len(classes) > 50  # every module was walked
    mixed = {c.__qualname__: [b.__name__ for b in concrete_bases(c)] for c in classes}
    assert {name: bases for name, bases in mixed.items() if len(bases) > 1} == {}


def test_only_a_database_descends_from_a_database_class() -> None:
    heirs = [
        c.__qualname__
        for c in storage_classes()
        if c not in DATABASES and any(issubclass(c, database) for database in DATABASES)
    ]
    assert heirs == []


def test_every_repository_of_a_store_holds_its_one_database(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "data.db")
    try:
        assert isinstance(store.database, SqliteDatabase)
        for name in REPOSITORIES:
            repository = getattr(store, name)
            assert not isinstance(repository, DATABASES), name
            assert not hasattr(repository, "write"), name  # the database's, not its own
            assert repository.database is store.database, name
    finally:
        store.close()
