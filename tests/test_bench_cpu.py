"""``benchmarks/_cpu.py``: the cores a run's processes used, read from ``/proc``."""

from __future__ import annotations

import hashlib
import os
import sys

import pytest
from benchmarks._cpu import CpuMeter

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_the_cpu_a_process_burns_is_counted_as_its_own() -> None:
    meter = CpuMeter([os.getpid()])
    digest = b""
    for _ in range(200_000):  # work on this process's CPU, whatever the clock says
        digest = hashlib.sha256(digest).digest()
    cpu = meter.read()
    assert cpu is not None
    assert cpu["hosts"] > 0
    assert 0 < cpu["busy"] <= cpu["cores"]
    assert cpu["hosts"] <= cpu["cores"]
