"""HTML from the package's Jinja2 templates: autoescaped, with the filters the pages use.

Every value a page shows (tags, reasons, tokens, errors) goes through Jinja2's
autoescape, and every URL with a tag in it is built here (``urlencode``), never by
string joining in a template.  Times are shown in UTC, as the CLI prints them.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


def when(epoch: float | None) -> str:
    """``2026-11-23 21:42:34.897Z`` (UTC, milliseconds); an em dash for None; the number
    as it is for one no date is (an ``expires_at`` another program wrote in milliseconds:
    a year past 9999 made the chain's page a 500)."""
    if epoch is None:
        return "—"
    try:
        moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    except (ValueError, OverflowError, OSError):
        return f"{epoch:g} (no date)"
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def duration(seconds: float | None) -> str:
    """``12 ms``, ``1.25 s``, ``4 min 3 s``, ``2 h 5 min``, ``3 d 4 h``."""
    if seconds is None:
        return "—"
    s = abs(seconds)
    if s < 1:
        text = f"{s * 1000:.0f} ms"
    elif s < 60:
        text = f"{s:.2f} s"
    elif s < 3600:
        text = f"{int(s // 60)} min {int(s % 60)} s"
    elif s < 86_400:
        text = f"{int(s // 3600)} h {int(s % 3600 // 60)} min"
    else:
        text = f"{int(s // 86_400)} d {int(s % 86_400 // 3600)} h"
    return f"-{text}" if seconds < 0 else text


def relative(epoch: float | None, now: float) -> str:
    """``in 4 min 3 s`` or ``12.00 s ago``."""
    if epoch is None:
        return "—"
    delta = epoch - now
    return f"in {duration(delta)}" if delta >= 0 else f"{duration(-delta)} ago"


def tag_key(tag: str) -> str:
    """The tag percent-encoded (UTF-8): what a page's ``data-key`` holds for the script.

    HTML makes an attribute's CR and CR LF an LF, and its NUL U+FFFD, so ``data-tag``
    cannot tell such a tag from another; this key has only ``A-Za-z0-9_.~%-`` (nothing to
    escape, nothing HTML changes), and ``decodeURIComponent`` gives the tag back exactly.
    """
    return quote(tag, safe="")


def number(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def short_hex(data: bytes | None, keep: int = 8) -> str:
    if not data:
        return "—"
    text = data.hex()
    return text if len(text) <= 2 * keep else text[: 2 * keep] + "…"


class Renderer:
    """The templates of the package, rendered with the request's base path and session."""

    def __init__(self, **defaults: Any) -> None:
        #: What every template may use without a page giving it (the table, the mode).
        self.defaults = defaults
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(TEMPLATES),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(
            when=when,
            duration=duration,
            number=number,
            tag_key=tag_key,
            short_hex=short_hex,
            hex=bytes.hex,
        )

    def render(
        self, request: Request, name: str, context: dict[str, Any], status: int = 200
    ) -> HTMLResponse:
        base = base_of(request)
        env = {
            **self.defaults,
            "base": base,
            "url": lambda path, **query: url(base, path, **query),
            "chain_url": lambda tag: url(base, "chain", tag=tag),
            **context,
        }
        html = self.env.get_template(name).render(env)
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def base_of(request: Request) -> str:
    """The dashboard's root URL path, with a slash at the end (``/`` or ``/ops/chains/``)."""
    root = str(request.scope.get("root_path", "")).rstrip("/")
    return root + "/"


def url(base: str, path: str, **query: object) -> str:
    """``base + path`` and the query of the non-empty values, each encoded."""
    pairs = [(k, str(v)) for k, v in query.items() if v is not None and v != ""]
    return base + path + ("?" + urlencode(pairs) if pairs else "")
