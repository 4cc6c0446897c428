"""A short run of ``benchmarks/torture.py`` (the README's Reliability figures come from long
runs): writers SIGKILLed at random moments, concurrent writers, a full disk and a read-only
home, then every acknowledged write checked; and (``--dream``) dreams and dream undos SIGKILLed
at random moments, each leaving exactly the pre-dream or the post-dream documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.postgres_support import URL_ENV

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="needs fork, SIGKILL and setrlimit"),
]


def _torture(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.torture", "--json", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.stdout.strip().startswith("{"), done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout)
    assert done.returncode == 0, (result, done.stderr[-3000:])
    return result


def _check(result: dict[str, object], kills: int, *, on_disk: bool = True) -> None:
    assert result["kills"] >= kills  # type: ignore[operator]
    assert result["concurrent_rounds"] and result["shared_database_rounds"]
    assert result["acknowledged_writes_checked"] > kills  # type: ignore[operator]
    assert (result["lost"], result["torn"], result["duplicated"]) == (0, 0, 0), result["details"]
    assert result["failed_writes_found_stored"] == 0
    if on_disk:
        assert result["disk_full_failed_writes"] > 0  # the file size limit was reached
    else:  # a PostgreSQL agent keeps nothing on the disk: a full disk refuses none of it
        assert result["disk_full_failed_writes"] == 0
    assert result["read_only_failures"] == []
    assert result["writer_errors"] == 0


def test_torture_short_run_on_sqlite() -> None:
    _check(_torture("--kills", "20", "--disk-full-rounds", "4"), 20)


def test_torture_short_run_on_postgres() -> None:
    url = os.environ.get(URL_ENV)
    if not url:
        pytest.skip(f"{URL_ENV} is not set")
    result = _torture("--kills", "12", "--disk-full-rounds", "4", "--backend", "postgres")
    _check(result, 12, on_disk=False)


def _check_dreams(result: dict[str, object], kills: int) -> None:
    """Every kill checked, most of them inside an apply or an undo, none inconsistent."""
    assert result["kills"] >= kills  # type: ignore[operator]
    assert result["landed_inside_apply_or_undo"] >= kills // 3  # type: ignore[operator]
    assert result["inconsistent"] == 0, result["details"]
    assert result["consistent"] == result["kills"]


def test_torture_dreams_short_run_on_sqlite() -> None:
    _check_dreams(_torture("--dream", "--kills", "30"), 30)


def test_torture_dreams_short_run_on_postgres() -> None:
    if not os.environ.get(URL_ENV):
        pytest.skip(f"{URL_ENV} is not set")
    _check_dreams(_torture("--dream", "--kills", "40", "--backend", "postgres"), 40)
