from __future__ import annotations

import string
from dataclasses import fields
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Limits, Settings, rand36
from markus_memory.errors import InvalidInputError


def test_rand36_is_n_base36_characters_and_varies() -> None:
    draws = {rand36(6) for _ in range(50)}
    assert all(len(d) == 6 and set(d) <= set(string.digits + string.ascii_lowercase) for d in draws)
    assert len(draws) > 1
    assert rand36(0) == ""


def test_item18_settings_home_expands_tilde_from_str_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for home in ("~/.markus", Path("~/.markus")):
        settings = Settings(home=home)  # type: ignore[arg-type]
        assert settings.home == tmp_path / ".markus"
        assert settings.agent_dir("a") == tmp_path / ".markus" / "agents" / "a"
    with open_agent("a", settings=Settings(home=Path("~/.markus"))) as mem:
        mem.notebook.upsert("k", "v")
    assert (tmp_path / ".markus" / "agents" / "a" / "NOTEBOOK.md").is_file()
    assert not (tmp_path / "~").exists()  # no literal ./~ folder


@pytest.mark.parametrize("name", [f.name for f in fields(Limits)])
@pytest.mark.parametrize("bad", [-1, "5", None, True])
def test_a_limit_that_is_not_a_number_of_zero_or_more_is_refused(name: str, bad: object) -> None:
    """Every limit is a size, a count, a share or a threshold: a negative one (or no number)
    is refused when the limits are made, with the field named, before any agent opens."""
    with pytest.raises(InvalidInputError, match=name):
        Limits(**{name: bad})  # type: ignore[arg-type]
    assert getattr(Limits(**{name: 0}), name) == 0
