"""A web dashboard of one chain table: ``xor-ack dashboard``, or an ASGI app to mount.

What it holds (docs/dashboard.md): the overview (open / overdue / failed now; created,
acked, failed, timed out and expired over 10 minutes, 3 hours and 24 hours; complete
latency; acks per minute), the lists of the inventory's indexes (filtered, paged, never
a scan), a chain's page with its history from the stream, and an operator's actions
(fail, touch, sweep, a fleet job's replay), live through server-sent events.

An app on the top layer: it imports only the package's public API (``xor_ack_dynamodb``,
``.errors``, ``.events``, ``.table``, ``.fleet``) and Starlette, uvicorn and Jinja2, the
``dashboard`` extra (``pip install 'xor-ack-dynamodb[dashboard]'``).  Importing this
package does not import them: ``Dashboard`` and ``DashboardConfig`` load on first use,
so ``xor-ack dashboard`` can say what to install when they are missing.

- :mod:`.config` the settings; :mod:`.security` the token, session, CSRF and Host checks;
- :mod:`.service` :class:`Dashboard`: the client, the counts, the stream follower;
- :mod:`.inventory` the indexes paged and counted; :mod:`.counts` counts kept fresh;
- :mod:`.follower` the stream, read in a thread; :mod:`.windows` counts per window,
  latency; :mod:`.history` each chain's history; :mod:`.live` server-sent events;
- :mod:`.app` the routes; :mod:`.pages` the pages; :mod:`.actions` the actions;
  :mod:`.errors` error pages; :mod:`.render` and :mod:`.charts` the HTML;
- :mod:`.command` the ``xor-ack dashboard`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ConfigError, DashboardConfig
    from .service import Dashboard

__all__ = ["ConfigError", "Dashboard", "DashboardConfig"]
#: Where each public name lives (imported on first use, with Starlette and Jinja2).
_WHERE = {"ConfigError": "config", "Dashboard": "service", "DashboardConfig": "config"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
