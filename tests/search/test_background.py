"""BackgroundJob: work made due by kicks, run off the caller's thread, stopped between steps."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from markus_memory.search.background import BackgroundJob


class Steps:
    """Work of ``count`` steps; each step waits for ``go`` (at most 30 s)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.go = threading.Event()
        self.started = threading.Event()
        self.done = 0
        self.runs = 0
        self.stopping: Callable[[], bool] = lambda: False

    def __call__(self, stopping: Callable[[], bool]) -> None:
        self.runs += 1
        self.stopping = stopping
        for _ in range(self.count):
            if stopping():
                return
            self.started.set()
            assert self.go.wait(30)
            self.done += 1


def test_a_kick_runs_the_work_in_another_thread_and_wait_sees_it_done() -> None:
    steps = Steps(3)
    steps.go.set()
    job = BackgroundJob(steps, "test")
    job.kick()
    assert job.wait(30)
    assert (steps.done, steps.runs) == (3, 1)


def test_wait_with_a_timeout_returns_while_the_work_goes_on() -> None:
    steps = Steps(1)
    job = BackgroundJob(steps, "test")
    job.kick()
    assert steps.started.wait(30)
    assert job.wait(0.01) is False
    steps.go.set()
    assert job.wait(30) and steps.done == 1


def test_a_kick_during_a_run_makes_one_more_run() -> None:
    steps = Steps(1)
    job = BackgroundJob(steps, "test")
    job.kick()
    assert steps.started.wait(30)
    job.kick()
    job.kick()
    steps.go.set()
    assert job.wait(30)
    assert steps.runs == 2


def test_stop_ends_the_work_after_the_step_under_way_and_no_kick_restarts_it() -> None:
    steps = Steps(100)
    job = BackgroundJob(steps, "test")
    job.kick()
    assert steps.started.wait(30)
    stopper = threading.Thread(target=job.stop)
    stopper.start()
    asked = threading.Event()
    for _ in range(30_000):  # stop() has asked before the step may end
        if steps.stopping():
            break
        asked.wait(0.001)
    assert steps.stopping()
    steps.go.set()
    stopper.join(30)
    assert not stopper.is_alive()
    assert steps.done == 1
    job.kick()
    assert job.wait(30) and steps.runs == 1


def test_what_the_work_raised_is_raised_by_the_next_wait_once() -> None:
    def broken(stopping: Callable[[], bool]) -> None:
        raise RuntimeError("embedder down")

    job = BackgroundJob(broken, "test")
    job.kick()
    with pytest.raises(RuntimeError, match="embedder down"):
        job.wait(30)
    assert job.wait(30)
