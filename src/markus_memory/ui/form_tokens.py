"""Per-browser form tokens: every form the UI renders carries one, every POST must return it.

The browser gets a random value in an HttpOnly, SameSite=Strict cookie; each rendered form
holds ``HMAC(secret, value)`` in a hidden field, the secret living only in this process. A
page of another origin (another port of this machine included, whose requests carry the
cookie along) can neither read the field nor compute it, so its forms are refused even if the
Origin check were bypassed. Requests that proved the token in an ``Authorization`` header
(scripts) need no form token: no other page can add that header to a form it submits.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from starlette.requests import Request

from ..http_guard import AUTH_SCOPE_KEY, ASGIApp, Message, Receive, Scope, Send, cookies_of

COOKIE = "markus_ui_forms"
FIELD = "form_token"
SCOPE_KEY = "markus_memory.form_token"
_VALUE = re.compile(r"[0-9a-f]{64}")


class FormTokens:
    """ASGI middleware: gives each browser its cookie and puts the expected field value in
    the request scope, for the templates (:func:`token_of`) and the form reader (:func:`valid`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._secret = secrets.token_bytes(32)

    def field_for(self, value: str) -> str:
        return hmac.new(self._secret, value.encode(), hashlib.sha256).hexdigest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        value = cookies_of(scope).get(COOKIE, "")
        fresh = _VALUE.fullmatch(value) is None
        if fresh:
            value = secrets.token_hex(32)
        scope[SCOPE_KEY] = self.field_for(value)

        async def send_with_cookie(message: Message) -> None:
            if fresh and message["type"] == "http.response.start":
                cookie = f"{COOKIE}={value}; HttpOnly; Path=/; SameSite=Strict"
                message["headers"] = [*message.get("headers", ()), (b"set-cookie", cookie.encode())]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def token_of(request: Request) -> str:
    """The value the forms of this response must carry."""
    return str(request.scope.get(SCOPE_KEY, ""))


def valid(request: Request, given: str) -> bool:
    """Whether a POST's ``given`` form token is this browser's (or it needs none)."""
    if request.scope.get(AUTH_SCOPE_KEY) == "bearer":
        return True
    expected = token_of(request)
    return bool(expected) and hmac.compare_digest(given.encode(), expected.encode())
