"""The ASGI application of a :class:`~.service.Dashboard`: routes, guard, error pages.

========================  ==========================================================
``GET /``                 the overview (``?partial=1``: its live fragment)
``GET /chains``           a list: ``status`` open / overdue / failed, ``prefix``,
                          ``reason`` (failed), ``cursor``, ``size``
``GET /rows?tag=T...``    rows of a list, by tag (what a list swaps in live)
``GET /chain?tag=T``      a chain's page
``GET /live``             server-sent events (:mod:`.live`)
``GET /actions/A``        the confirmation of action A: fail, touch, sweep, replay
``POST /actions/A``       the action, from its confirmation's form
``GET /static/...``       the stylesheet and the script (no token needed)
========================  ==========================================================

Every response carries a strict Content-Security-Policy (scripts and styles from the
dashboard only, no inline script), ``X-Frame-Options: DENY``, ``nosniff`` and
``Referrer-Policy: same-origin`` (a link's token never leaves for another site in a Referer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import actions, errors, pages
from .render import STATIC, base_of
from .security import HEADERS, Refused

if TYPE_CHECKING:
    from .service import Dashboard

ACTIONS = {"fail": actions.fail, "touch": actions.touch, "sweep": actions.sweep}


class Guarded:
    """ASGI middleware: security headers on every response; the Host, the token and the
    session checked before any route runs; the dashboard started on its first request."""

    def __init__(self, app: ASGIApp, dashboard: Dashboard) -> None:
        self.app = app
        self.dashboard = dashboard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        request = Request(scope, receive)
        try:
            response = await self._check(request)
        except Refused as refused:
            response = self.dashboard.renderer.render(
                request,
                "error.html",
                {"error": refused, "page": "error"},
                status=refused.status,
            )
        if response is not None:
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    async def _check(self, request: Request) -> Response | None:
        guard = self.dashboard.guard
        guard.check_host(request)
        path, root = request.scope["path"], request.scope.get("root_path", "")
        if path.startswith(root):
            path = path[len(root) :]
        if path.startswith("/static/"):
            return None
        target = guard.login(request)
        if target is not None:
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(
                guard.cookie,
                guard.new_session(),
                path=base_of(request),
                httponly=True,
                samesite="strict",
                secure=self.dashboard.secure_cookie(request),
            )
            return response
        if request.method in ("GET", "HEAD"):
            guard.check_read(request)
        elif guard.session_of(request) is None:
            raise Refused(
                403,
                "Token needed",
                "actions need a session opened with the dashboard's token (its ?token= link)",
            )
        try:
            await self.dashboard.ensure_started()
        except errors.HANDLED as exc:  # its page, as the routes' own errors get it
            raise errors.refusal_of(exc) from exc
        return None


async def live(request: Request) -> Response:
    dashboard = pages.dashboard_of(request)
    return StreamingResponse(
        dashboard.live.stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def action(request: Request) -> Response:
    name = request.path_params["action"]
    if name == "replay":
        return await actions.replay(request)
    handler = ACTIONS.get(name)
    if handler is None:
        raise Refused(404, "No such action", "the actions are fail, touch, sweep and replay")
    return await handler(request)


async def confirm(request: Request) -> Response:
    if request.path_params["action"] not in (*ACTIONS, "replay"):
        raise Refused(404, "No such action", "the actions are fail, touch, sweep and replay")
    return await actions.confirm(request)


def build_app(dashboard: Dashboard) -> Starlette:
    app = Starlette(
        routes=[
            Route("/", pages.overview),
            Route("/chains", pages.chains),
            Route("/rows", pages.rows),
            Route("/chain", pages.chain),
            Route("/live", live),
            Route("/actions/{action}", confirm, methods=["GET"]),
            Route("/actions/{action}", action, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={
            **{kind: errors.handle for kind in errors.HANDLED},
            404: errors.handle,
            405: errors.handle,
            Exception: errors.handle,
        },
        lifespan=dashboard.lifespan,
    )
    app.state.dashboard = dashboard
    app.add_middleware(Guarded, dashboard=dashboard)
    return app
