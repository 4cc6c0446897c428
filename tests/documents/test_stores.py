"""The DocumentStore contract, for files and PostgreSQL alike."""

from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory._docs import DocumentStore, check_name, is_document_name
from markus_memory.errors import BusyError, InvalidInputError


def test_write_read_version_exists_delete(docs: DocumentStore) -> None:
    assert docs.read("NOTEBOOK.md") is None
    assert docs.version("NOTEBOOK.md") is None and not docs.exists("NOTEBOOK.md")
    docs.write("NOTEBOOK.md", "# Notebook\r\n\nline\n")
    assert docs.read("NOTEBOOK.md") == "# Notebook\r\n\nline\n"
    first = docs.version("NOTEBOOK.md")
    assert first is not None and docs.exists("NOTEBOOK.md")
    docs.write("NOTEBOOK.md", "# Notebook\r\n\nline\n")
    second = docs.version("NOTEBOOK.md")
    assert second is not None and second.token != first.token  # every write is a new version
    assert second.modified_ns >= first.modified_ns > 0
    assert docs.delete("NOTEBOOK.md") is True and docs.delete("NOTEBOOK.md") is False
    assert docs.read("NOTEBOOK.md") is None


def test_names_and_dump_keep_exact_text_and_a_bom(docs: DocumentStore) -> None:
    texts = {
        "knowledge.md": "\ufeff# Knowledge\n",
        "role/ROLE.md": "# Role\n\nDo things — carefully ✓\n",
        "state.md": "",
    }
    for name, text in texts.items():
        docs.write(name, text)
    assert docs.names() == sorted(texts)
    assert docs.dump() == texts
    assert docs.read("knowledge.md") == "# Knowledge\n"  # the layers never see a BOM


def test_a_re_created_document_never_reuses_a_version(docs: DocumentStore) -> None:
    docs.write("state.md", "a")
    seen = docs.version("state.md")
    docs.delete("state.md")
    docs.write("state.md", "b")
    assert docs.version("state.md") != seen


def test_lock_is_reentrant_and_reads_inside_see_writes_inside(docs: DocumentStore) -> None:
    with docs.lock():
        docs.write("state.md", "one")
        with docs.lock():
            docs.write("state.md", docs.read("state.md") + " two")
        assert docs.read("state.md") == "one two"
    assert docs.read("state.md") == "one two"


def test_the_lock_excludes_other_threads(docs: DocumentStore) -> None:
    docs.write("state.md", "0")

    def bump() -> None:
        for _ in range(10):
            with docs.lock():
                docs.write("state.md", str(int(docs.read("state.md") or "0") + 1))

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert docs.read("state.md") == "40"


def test_exclusive_refuses_a_second_holder_and_frees_on_exit(docs: DocumentStore) -> None:
    with docs.exclusive("dream"):
        with pytest.raises(BusyError, match="dream is already running"):
            with docs.exclusive("dream"):
                pass
        failures: list[BaseException] = []

        def other_thread() -> None:
            try:
                with docs.exclusive("dream"):
                    pass
            except BusyError as exc:
                failures.append(exc)

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert len(failures) == 1
        with docs.exclusive("flush"):  # another task is independent
            pass
    with docs.exclusive("dream"):
        pass


@pytest.mark.parametrize("name", ["../x.md", "notes.md", "role/a/b.md", "role/.hidden", "/etc"])
def test_only_document_names_are_accepted(name: str) -> None:
    assert not is_document_name(name)
    with pytest.raises(InvalidInputError):
        check_name(name)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=300
    )
)
def test_any_text_is_stored_exactly(docs: DocumentStore, text: str) -> None:
    docs.write("role/CONTEXT.md", text)
    assert docs.dump()["role/CONTEXT.md"] == text
    assert docs.read("role/CONTEXT.md") == text.removeprefix("\ufeff")


def test_a_lock_held_too_long_times_out_on_postgres(postgres_url: str) -> None:
    from markus_memory.errors import LockTimeoutError
    from markus_memory.storage._postgres.documents import PostgresDocuments
    from tests.postgres_support import new_agent_id

    agent = new_agent_id()
    holder = PostgresDocuments(postgres_url, agent)
    waiter = PostgresDocuments(postgres_url, agent, lock_timeout=0.2)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.lock():
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(10)
        with pytest.raises(LockTimeoutError, match="could not lock the documents"):
            with waiter.lock():
                pass
    finally:
        release.set()
        thread.join()
        holder.close()
        waiter.close()
