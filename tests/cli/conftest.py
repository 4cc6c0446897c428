from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from markus_memory.cli import cli

Invoke = Callable[..., Result]


@pytest.fixture
def invoke(isolated_home: Path) -> Invoke:
    """Run ``markus-memory ARGS`` in-process against the test's MARKUS_HOME."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None, code: int = 0) -> Result:
        result = runner.invoke(cli, list(args), input=input, catch_exceptions=False)
        assert result.exit_code == code, (result.exit_code, result.output)
        return result

    return run


def as_json(result: Result) -> Any:
    return json.loads(result.stdout)
