"""The one HTTP guard of markus-memory's servers (the MCP HTTP transport and the web UI).

Rules, the same for both:

* **Token.** Only the literal loopback names ``127.0.0.1``, ``localhost`` and ``::1`` may be
  bound without a token; any other address (``127.0.0.2`` included) needs one. When a token is
  set, every request must carry it: ``Authorization: Bearer <token>`` (the scheme is
  case-insensitive, RFC 7235) or, for the UI, the session cookie its login form sets.
* **Host and Origin, on every bind.** A request whose ``Host`` is not a name of the bound
  address is refused (DNS rebinding: a page on ``attacker.example`` that re-points its name at
  this machine still sends ``Host: attacker.example``). A browser request must come from this
  server's own origin, exactly: an ``Origin`` header (or, on a state-changing request without
  one, the ``Referer``) must name the request's scheme, one of the bound address's names and
  the very port the request was sent to. A page on another port of the same machine
  (``http://127.0.0.1:<other port>``, a dev server, a notebook) is another origin and is
  refused, although browsers call it the same *site* and send SameSite cookies along; so is a
  request that says ``Sec-Fetch-Site: cross-site`` (or ``same-site`` on a state-changing
  method) without naming its origin.

The guard is plain ASGI (no framework import), so both servers wrap their app in it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, Collection, Iterator, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from .errors import InvalidInputError, MarkusMemoryError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Refusal = Callable[[Scope, Receive, Send, int, str], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing; every other one must prove it comes from this origin."""
DEFAULT_PORTS = {"http": 80, "https": 443}
WEB_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}
"""The scheme of the page that may open a connection of each scheme."""
AUTH_SCOPE_KEY = "markus_memory.auth"
"""Set in the ASGI scope to ``"bearer"`` when the request proved the token in its header (a
browser cannot add that header to a form another page submits)."""
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
"""The bind addresses that may skip the token: the literal loopback names, nothing else."""
WILDCARD = frozenset({"0.0.0.0", "::"})
DRAIN_SECONDS = 25
"""How long a server stopped by SIGTERM lets requests in flight finish (under the 30 s an
orchestrator such as Kubernetes waits before it kills)."""


class PortInUseError(MarkusMemoryError):
    """The port is taken (or the address cannot be bound)."""


def bare_host(host: str) -> str:
    """``[::1]`` → ``::1``; names lower-cased; everything else unchanged."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host.lower()


def needs_token(host: str) -> bool:
    """True unless ``host`` is literally 127.0.0.1, localhost or ::1."""
    return bare_host(host) not in LOOPBACK_NAMES


def check_binding(host: str, token: str | None, env_name: str) -> None:
    """Refuse an empty token, and a bind beyond the literal loopback names without one."""
    if token is not None and not token.strip():
        raise InvalidInputError("the bearer token is empty; pass a long random string")
    if needs_token(host) and token is None:
        raise InvalidInputError(
            f"refusing to bind {host!r} without a bearer token: pass --token (or set {env_name}), "
            "or bind 127.0.0.1"
        )


def allowed_host_names(host: str, extra: Collection[str] = ()) -> frozenset[str] | None:
    """The ``Host`` names a request may carry for a server bound to ``host``.

    ``None`` means "any IP literal or this machine's own names" (a wildcard bind).
    """
    bound = bare_host(host)
    if bound in WILDCARD:
        return None
    names = {bound, *(bare_host(e) for e in extra)}
    if bound in LOOPBACK_NAMES:
        names |= LOOPBACK_NAMES
    return frozenset(names)


def _host_of(value: str) -> str:
    """The host part of a ``Host`` header or URL netloc: ``[::1]:8765`` → ``::1``."""
    value = value.strip()
    if value.startswith("["):
        return value[1 : value.find("]")].lower() if "]" in value else value.lower()
    return value.rsplit(":", 1)[0].lower() if value.count(":") == 1 else value.lower()


def _port_of(netloc: str, scheme: str) -> int | None:
    """The port of a ``Host`` header or URL netloc (the scheme's default when absent); ``None``
    when it is not a number."""
    tail = netloc.rpartition("]")[2] if netloc.startswith("[") else netloc
    if tail.count(":") != 1:
        return DEFAULT_PORTS.get(scheme)
    digits = tail.rpartition(":")[2]
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 5:
        return None
    return int(digits)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _machine_names() -> frozenset[str]:
    names = {socket.gethostname().lower(), socket.getfqdn().lower(), *LOOPBACK_NAMES}
    return frozenset(n for n in names if n)


def session_cookie_value(token: str) -> str:
    """What the UI's login cookie holds: derived from the token, never the token itself."""
    return hmac.new(token.encode(), b"markus-memory ui session", hashlib.sha256).hexdigest()


class HttpGuard:
    """ASGI middleware enforcing the rules of this module around ``app``.

    ``cookie`` names a cookie that may carry the session (the UI); ``open_paths`` are served
    without the token (the UI's login page and its static files) but still Host/Origin-checked;
    ``refuse`` renders a refusal (default: a small JSON body).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str,
        token: str | None,
        cookie: str | None = None,
        open_paths: Collection[str] = (),
        allowed_hosts: Collection[str] = (),
        refuse: Refusal | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.cookie = cookie
        self.open_paths = tuple(open_paths)
        self._hosts = allowed_host_names(host, allowed_hosts)
        self._machine = _machine_names()
        self._refuse = refuse if refuse is not None else json_refusal
        self._cookie_value = None if token is None else session_cookie_value(token)

    def host_allowed(self, name: str) -> bool:
        if self._hosts is None:
            return _is_ip(name) or name in self._machine
        return name in self._hosts

    def _check(self, scope: Scope) -> tuple[int, str] | None:
        headers = _headers(scope)
        host = headers.get("host")
        if host is None or not self.host_allowed(_host_of(host)):
            return 421, f"this server does not answer to the host {host or '(none)'!r}"
        refused = self._foreign(scope, headers, host)
        if refused is not None:
            return 403, refused
        if self.token is None or self._open(scope.get("path", "")):
            return None
        if self._authorised(scope, headers):
            return None
        return 401, "unauthorized: send Authorization: Bearer <token>"

    def _foreign(self, scope: Scope, headers: dict[str, str], host: str) -> str | None:
        """Why the request is refused as coming from another origin, or ``None``."""
        unsafe = scope.get("method", "GET").upper() not in SAFE_METHODS
        origin = headers.get("origin")
        if origin is None and unsafe and "referer" in headers:
            origin = headers["referer"]
        if origin is not None:
            if self._own_origin(scope, origin, host):
                return None
            shown = origin if len(origin) <= 200 else origin[:200] + "…"
            return (
                f"requests from {shown!r} are refused: only pages of this server "
                f"({scope.get('scheme', 'http')}://{host}) may send them"
            )
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site == "cross-site" or (unsafe and fetch_site == "same-site"):
            return "requests from another site or another port are refused"
        return None

    def _own_origin(self, scope: Scope, origin: str, host: str) -> bool:
        """Whether ``origin`` (an Origin or Referer value) is this server's own: the request's
        scheme, an allowed host name, and the port the request was sent to."""
        if origin == "null":
            return False
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        scheme = WEB_SCHEMES.get(str(scope.get("scheme", "http")).lower(), "http")
        if parts.scheme.lower() != scheme or not parts.netloc or "@" in parts.netloc:
            return False
        port = _port_of(parts.netloc, scheme)
        return (
            self.host_allowed(_host_of(parts.netloc))
            and port is not None
            and port == _port_of(host.strip(), scheme)
        )

    def _open(self, path: str) -> bool:
        return any(path == p or (p.endswith("/") and path.startswith(p)) for p in self.open_paths)

    def _authorised(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None and self._cookie_value is not None
        scheme, _, given = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), self.token.encode()
        ):
            scope[AUTH_SCOPE_KEY] = "bearer"
            return True
        if self.cookie is None:
            return False
        cookie = _cookies(headers.get("cookie", "")).get(self.cookie, "")
        return hmac.compare_digest(cookie.encode(), self._cookie_value.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refused = self._check(scope)
            if refused is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await self._refuse(scope, receive, send, *refused)
                return
        await self.app(scope, receive, send)


def _headers(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers") or ():
        name = key.decode("latin-1").lower()
        if name not in found:
            found[name] = value.decode("latin-1")
    return found


def cookies_of(scope: Scope) -> dict[str, str]:
    """The cookies a request carries (the first of each name)."""
    return _cookies(_headers(scope).get("cookie", ""))


def _cookies(header: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in header.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep and name not in found:
            found[name] = value.strip().strip('"')
    return found


async def json_refusal(scope: Scope, receive: Receive, send: Send, status: int, why: str) -> None:
    body = json.dumps({"error": why}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``[::1]`` and ``::1`` both work).

    Raises :class:`PortInUseError` with one line saying what to do when it cannot bind.
    """
    bound = bare_host(host)
    try:
        infos = socket.getaddrinfo(bound, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise PortInUseError(f"cannot resolve the host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(
                f"port {port} on {host} is already in use; pick another with --port"
            ) from None
        raise PortInUseError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def url_host(host: str) -> str:
    """``host`` as it goes into a URL: IPv6 literals in brackets."""
    bound = bare_host(host)
    return f"[{bound}]" if ":" in bound else bound


def run_on_socket(app: ASGIApp, sock: socket.socket, *, drain_seconds: int = DRAIN_SECONDS) -> None:
    """Serve ``app`` with uvicorn (from the ``mcp`` or ``ui`` extra) on the listening ``sock``
    until interrupted or sent SIGTERM; the socket is closed afterwards.

    SIGTERM drains: the socket closes at once (a new connection is refused, an idle kept-alive
    one is closed), requests in flight finish (for at most ``drain_seconds``, then they are
    cancelled), and this returns, so the process exits 0. SIGINT does the same and then
    re-raises, as a Ctrl-C does."""
    import signal

    import uvicorn

    class Draining(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                self._captured_signals[:] = [
                    s for s in self._captured_signals if s != signal.SIGTERM
                ]

    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=drain_seconds)
    try:
        Draining(config).run(sockets=[sock])
    finally:
        sock.close()
