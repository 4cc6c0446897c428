"""BackgroundJob: work that runs in one daemon thread whenever it is due, off the caller's path.

Recall makes the transcript vectors this way: appends mark them due, a thread embeds what the
store lacks, and a recall waits at most a moment for it before ranking what is embedded (the
rest by its words). ``wait`` without a timeout is the way to know that everything due is done.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Work = Callable[[Callable[[], bool]], None]
"""The job: does everything due, checking ``stopping()`` between steps (it returns early then)."""


class BackgroundJob:
    """Runs ``work`` in a daemon thread after each :meth:`kick` (a kick during a run makes one
    more run). Thread-safe. ``work`` raising is kept and raised by the next :meth:`wait`."""

    def __init__(self, work: Work, name: str) -> None:
        self._work = work
        self._name = name
        self._cond = threading.Condition()
        self._due = False
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._error: BaseException | None = None

    def kick(self) -> None:
        """Make the work due, starting the thread if none runs (nothing after :meth:`stop`)."""
        with self._cond:
            if self._stopping:
                return
            self._due = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until nothing is due or running (at most ``timeout`` seconds); True if so.
        Raises what the work raised since the last wait."""
        with self._cond:
            idle = self._cond.wait_for(lambda: self._thread is None, timeout)
            error, self._error = self._error, None
        if error is not None:
            raise error
        return idle

    def stop(self) -> None:
        """Ask a run to end after its current step and wait for the thread; no run after it."""
        with self._cond:
            self._stopping = True
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _stopping_now(self) -> bool:
        return self._stopping

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._due or self._stopping:
                    self._thread = None
                    self._cond.notify_all()
                    return
                self._due = False
            try:
                self._work(self._stopping_now)
            except Exception as exc:  # kept for the next wait(); the thread goes on
                log.exception("background job %s failed", self._name)
                with self._cond:
                    self._error = exc
