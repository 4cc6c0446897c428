"""A dream or an undo on a read-only home raises the package's own error, which names what
could not be written, and changes nothing."""

from __future__ import annotations

from pathlib import Path

from markus_memory.config import Limits, Settings
from markus_memory.dream import dream, undo_last_dream
from markus_memory.errors import StorageError
from markus_memory.memory import open_agent
from tests.test_files_trust import _read_only, posix_only


def _settings(home: Path) -> Settings:
    return Settings(home=home, limits=Limits())


@posix_only
def test_dream_and_undo_on_a_read_only_home_say_what_cannot_be_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_agent("alice", settings=_settings(home)) as mem:
        for text in ("deploy on fridays", "Deploy on Fridays."):
            mem.knowledge.save_observation(text)
    knowledge = home / "agents" / "alice" / "knowledge.md"
    before = knowledge.read_bytes()

    def attempt() -> None:
        with open_agent("alice", settings=_settings(home)) as mem:
            for call in (dream, undo_last_dream):
                try:
                    call(mem)
                except StorageError as exc:
                    message = str(exc)
                    assert "cannot be written" in message and str(home) in message, message
                    assert "Traceback" not in message and "Errno" not in message, message
                else:
                    raise AssertionError(f"{call.__name__} on a read-only home did not raise")

    assert _read_only(home, attempt) == ""
    assert knowledge.read_bytes() == before
