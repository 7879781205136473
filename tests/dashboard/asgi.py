"""A tiny ASGI client: one request to an app in this process, its status, headers and body.

The dashboard's checks that need no browser (the token, CSRF, error pages, paging) call
its ASGI app directly, without a server or an HTTP library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlencode, urlsplit


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()

    def csrf(self) -> str:
        return self.field("csrf")

    def field(self, name: str) -> str:
        """The value of the page's (hidden) form field ``name``."""
        found = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', self.text)
        assert found is not None, f"no {name} field on the page"
        return found.group(1)


@dataclass
class Client:
    """Requests to ``app`` as from one browser: it keeps the cookies it is given."""

    app: Any
    host: str = "127.0.0.1:8321"
    root_path: str = ""
    cookies: dict[str, str] = field(default_factory=dict)

    async def request(
        self,
        method: str,
        target: str,
        *,
        form: dict[str, str] | None = None,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        parts = urlsplit(target)
        sent = {"host": self.host, **(headers or {})}
        if self.cookies:
            sent["cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if form is not None:
            body = urlencode(form).encode()
            sent.setdefault("content-type", "application/x-www-form-urlencoded")
        body = body or b""
        if body:
            sent["content-length"] = str(len(body))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": self.root_path + parts.path,
            "raw_path": (self.root_path + parts.path).encode(),
            "root_path": self.root_path,
            "query_string": parts.query.encode(),
            "headers": [(k.lower().encode(), v.encode()) for k, v in sent.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8321),
            "state": {},
        }
        chunks = [body]
        out: dict[str, Any] = {"body": b""}

        async def receive() -> dict[str, Any]:
            if chunks:
                return {"type": "http.request", "body": chunks.pop(), "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
                out["headers"] = [(k.decode(), v.decode()) for k, v in message["headers"]]
            elif message["type"] == "http.response.body":
                out["body"] += message.get("body", b"")

        await self.app(scope, receive, send)
        for name, value in out["headers"]:
            if name == "set-cookie":
                cookie: SimpleCookie = SimpleCookie()
                cookie.load(value)
                self.cookies.update({k: m.value for k, m in cookie.items()})
        return Answer(out["status"], dict(out["headers"]), out["body"])

    async def get(self, target: str, **kwargs: Any) -> Answer:
        return await self.request("GET", target, **kwargs)

    async def post(self, target: str, **kwargs: Any) -> Answer:
        return await self.request("POST", target, **kwargs)
