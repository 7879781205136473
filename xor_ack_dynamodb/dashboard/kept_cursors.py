"""Cursors too long for a link, kept by the dashboard under a short name.

A list's cursor holds a tag per shard (``inventory.encode_cursor``), deflated: tags
that share their paths stay short, but 16 long tags with nothing in common (hashes,
random ids) do not fit a URL (uvicorn's h11 reads a request's head up to 16 KiB;
``pages.MAX_CURSOR``), and the "Next page" link of such a list was refused.  A cursor
longer than ``IN_LINK`` is kept here instead, the ``KEPT`` most recently used of
them, and the link names it: ``~`` and 16 random characters (a cursor itself is
URL-safe base64, never ``~``).  One cursor keeps one name.  A name this dashboard no
longer holds (it restarted, or more than ``KEPT`` long cursors were used since) is a
bad cursor: the list starts again from its first page.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict

from .inventory import BadCursor

#: Long cursors kept (each at most ``pages.MAX_CURSOR`` characters' worth of positions).
KEPT = 256
#: A cursor up to this long goes in the link itself.
IN_LINK = 2_000
MARK = "~"


class KeptCursors:
    """``named`` for a page's link, ``cursor`` for the request that follows it."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept: OrderedDict[str, str] = OrderedDict()  # name -> cursor, oldest first
        self._names: dict[str, str] = {}  # cursor -> name
        self._most = kept

    def named(self, cursor: str | None) -> str | None:
        """``cursor`` as a link carries it: itself, or the short name it is kept under."""
        if cursor is None or len(cursor) <= IN_LINK:
            return cursor
        name = self._names.get(cursor)
        if name is None:
            name = MARK + secrets.token_urlsafe(12)
            self._names[cursor] = name
        self._keep(name, cursor)
        return name

    def cursor(self, given: str) -> str:
        """The cursor a link's ``given`` stands for; ``BadCursor`` for a name not kept."""
        if not given.startswith(MARK):
            return given
        cursor = self._kept.get(given)
        if cursor is None:
            raise BadCursor(
                "this page's place is no longer kept by the dashboard (it keeps the "
                f"{self._most} last used of the places too long for a link, until it restarts)"
            )
        self._keep(given, cursor)
        return cursor

    def _keep(self, name: str, cursor: str) -> None:
        self._kept[name] = cursor
        self._kept.move_to_end(name)
        while len(self._kept) > self._most:
            _, dropped = self._kept.popitem(last=False)
            del self._names[dropped]
