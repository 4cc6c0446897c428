"""A small TCP proxy between markus-memory and PostgreSQL that can cut every connection.

For tests and ``bench_hosts.py --proxy``: :class:`TcpProxy` listens on a free loopback port and
forwards each connection to ``upstream`` (PostgreSQL at 127.0.0.1:5432 by default), one thread
a direction. :meth:`TcpProxy.cut` drops every open connection at once (both sides see a reset,
whatever they were doing: mid-query, mid-transaction, mid-commit); :meth:`TcpProxy.chaos` does
that at random moments from a background thread; :meth:`TcpProxy.refuse` makes new connections
fail at once (a server that went away), :meth:`TcpProxy.accept` lets them through again.

Run alone it serves until interrupted: ``python -m benchmarks._tcp_proxy --cut-every 2``.
"""

from __future__ import annotations

import argparse
import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

CHUNK = 65_536


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a TCP reset (SO_LINGER 0), as a dropped link or a killed peer does.

    ``shutdown(SHUT_RD)`` first wakes the pump thread blocked reading it (a plain close would
    leave that read, and the connection, alive)."""
    for step in (
        lambda: sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)),
        lambda: sock.shutdown(socket.SHUT_RD),
        sock.close,
    ):
        try:
            step()
        except OSError:
            pass


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``upstream``; see the module docstring."""

    def __init__(self, upstream: tuple[str, int] = ("127.0.0.1", 5432)) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._guard = threading.Lock()
        self._refusing = False
        self._closed = threading.Event()
        self.cuts = 0
        """How many times :meth:`cut` dropped at least one connection."""
        self._accepting = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        self._accepting.start()
        self._chaos: tuple[threading.Thread, threading.Event] | None = None

    def url(self, url: str) -> str:
        """``url`` (a PostgreSQL URL naming the upstream) pointed at this proxy instead."""
        parts = urlsplit(url)
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@127.0.0.1:{self.port}" if userinfo else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                # A client that reset before it was accepted (ECONNABORTED) must not stop the
                # proxy: only close() does.
                continue
            if self._refusing:
                _reset(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                _reset(client)
                continue
            pair = (client, server)
            with self._guard:
                self._pairs.add(pair)
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst, pair), daemon=True).start()

    def _pump(
        self, src: socket.socket, dst: socket.socket, pair: tuple[socket.socket, socket.socket]
    ) -> None:
        try:
            while data := src.recv(CHUNK):
                dst.sendall(data)
        except OSError:
            pass
        with self._guard:
            if pair not in self._pairs:
                return
            self._pairs.discard(pair)
        for sock in pair:
            _reset(sock)

    @property
    def connections(self) -> int:
        with self._guard:
            return len(self._pairs)

    def cut(self) -> int:
        """Reset every open connection now; how many there were."""
        with self._guard:
            pairs, self._pairs = self._pairs, set()
        for pair in pairs:
            for sock in pair:
                _reset(sock)
        if pairs:
            self.cuts += 1
        return len(pairs)

    def refuse(self) -> None:
        """Cut every connection and refuse new ones until :meth:`accept`."""
        self._refusing = True
        self.cut()

    def accept(self) -> None:
        self._refusing = False

    def chaos(self, mean_seconds: float, seed: int = 0) -> None:
        """Cut every connection at random moments, ``mean_seconds`` apart on average
        (exponential gaps), until :meth:`calm` or :meth:`close`."""
        self.calm()
        stop = threading.Event()
        rng = random.Random(seed)

        def run() -> None:
            while not stop.wait(rng.expovariate(1 / mean_seconds)):
                if self._closed.is_set():
                    return
                self.cut()

        thread = threading.Thread(target=run, name="proxy-chaos", daemon=True)
        self._chaos = (thread, stop)
        thread.start()

    def calm(self) -> None:
        """Stop :meth:`chaos` (open connections stay)."""
        running, self._chaos = self._chaos, None
        if running is not None:
            running[1].set()
            running[0].join(5)

    def close(self) -> None:
        self.calm()
        self._closed.set()
        try:
            self._listener.close()
        except OSError:
            pass
        self.cut()
        self._accepting.join(5)


@contextmanager
def proxy(upstream: tuple[str, int] = ("127.0.0.1", 5432)) -> Iterator[TcpProxy]:
    """A :class:`TcpProxy` closed on exit."""
    running = TcpProxy(upstream)
    try:
        yield running
    finally:
        running.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", default="127.0.0.1:5432")
    parser.add_argument("--cut-every", type=float, default=0.0, help="mean seconds between cuts")
    args = parser.parse_args()
    host, _, port = args.upstream.rpartition(":")
    with proxy((host, int(port))) as running:
        print(f"proxy on 127.0.0.1:{running.port} -> {args.upstream}", flush=True)
        if args.cut_every > 0:
            running.chaos(args.cut_every)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
