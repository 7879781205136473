"""Who may see the dashboard and act through it: the token, the session, CSRF, the Host.

- **The token** opens the dashboard: ``?token=...`` on any page (the URL the command
  prints) sets a session cookie and redirects to the same page without it; scripts may
  send ``Authorization: Bearer <token>`` instead.  Without either, every page but the
  static assets answers 401, and every action 403.
- **The session cookie** is ``<id>.<signature>``, signed with a key derived from the
  token (HMAC-SHA256): ``HttpOnly``, ``SameSite=Strict``, scoped to the dashboard's path.
  Its name carries a digest of that key (``xor_ack_dashboard_<8 hex>``): browsers keep
  cookies per host, not per port, so two dashboards on one host with their own tokens
  would otherwise each replace the other's session.  A restart with the same token keeps
  sessions; a new token ends them.
- **Actions** are POSTs from a cookie session with the session's CSRF token (an HMAC of
  the session id) in the form, from the same origin (``Origin`` and ``Sec-Fetch-Site``,
  when the browser sends them; or from ``--public-url``'s origin, behind a proxy).
  ``--read-only`` refuses every action.
- **The Host** header must be one of ``allowed_hosts`` (loopback names for a dashboard
  bound to loopback, and ``--public-url``'s host): a page elsewhere whose name resolves
  to 127.0.0.1 is refused.

Every check compares secrets in constant time (``hmac.compare_digest``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit, urlunsplit

from starlette.requests import Request

#: On every response (the Guarded middleware; the 500 page, made outside it, by
#: ``errors.handle``).
HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    # same-origin, not no-referrer: with no-referrer browsers send "Origin: null" on a form's
    # POST, and the Origin check needs the real one; other sites still get no Referer
    (b"referrer-policy", b"same-origin"),
]


#: The session cookie's name, before the digest of the dashboard's key (``Guard.cookie``).
COOKIE = "xor_ack_dashboard"
CSRF_FIELD = "csrf"
#: The query parameter that carries the token in the URL the command prints.
TOKEN_PARAM = "token"


class Refused(Exception):
    """A request the dashboard will not serve: rendered as a page with ``status``."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(f"{status} {title}: {detail}")
        self.status = status
        self.title = title
        self.detail = detail


def _sign(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


@dataclass
class Guard:
    """The checks of one dashboard, keyed by its token."""

    token: str = field(repr=False)
    allowed_hosts: tuple[str, ...] | None = None
    #: Origins accepted on actions besides the request's own: a proxy's public one, which
    #: the request does not show when the proxy names the dashboard by its own address.
    trusted_origins: tuple[str, ...] = ()
    _key: bytes = field(init=False, repr=False)
    #: The session cookie's name: this token's (see the module docstring).
    cookie: str = field(init=False)

    def __post_init__(self) -> None:
        self._key = hmac.new(
            self.token.encode(), b"xor-ack dashboard session", hashlib.sha256
        ).digest()
        self.cookie = f"{COOKIE}_{_sign(self._key, 'cookie name')[:8]}"

    # -- the token and the session ----------------------------------------------------

    def token_matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    def new_session(self) -> str:
        session_id = secrets.token_urlsafe(18)
        return f"{session_id}.{_sign(self._key, 'session:' + session_id)}"

    def session_of(self, request: Request) -> str | None:
        """The request's valid session cookie, if it has one."""
        value = request.cookies.get(self.cookie, "")
        session_id, _, signature = value.partition(".")
        if not session_id or not signature:
            return None
        expected = _sign(self._key, "session:" + session_id)
        return value if hmac.compare_digest(signature.encode(), expected.encode()) else None

    def bearer_of(self, request: Request) -> bool:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.token_matches(given.strip())

    def csrf_for(self, session: str) -> str:
        return _sign(self._key, "csrf:" + session)

    # -- the checks ---------------------------------------------------------------------

    def check_host(self, request: Request) -> None:
        if self.allowed_hosts is None:
            return
        host = request.headers.get("host", "")
        try:
            name = urlsplit(f"//{host}").hostname or ""
        except ValueError:  # no host name at all: "[::1", "[not-an-address]"
            name = ""
        if name not in self.allowed_hosts:
            raise Refused(
                400,
                "Unexpected Host",
                f"this dashboard answers to {', '.join(self.allowed_hosts)} only, not to {host!r}",
            )

    def login(self, request: Request) -> str | None:
        """For ``?token=`` in the URL: where to redirect once the cookie is set (the same
        page without the token, as a path: behind a proxy the request's own scheme, host and
        port are not the browser's); ``Refused`` for a wrong token; None without one."""
        given = request.query_params.get(TOKEN_PARAM)
        if given is None:
            return None
        if not self.token_matches(given):
            raise Refused(
                401,
                "Wrong token",
                "the token in this link is not this dashboard's token (each start of "
                "`xor-ack dashboard` without --token makes a new one): open the link the "
                "running `xor-ack dashboard` printed, or start it with --token to keep one",
            )
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM]
        path = "/" + request.url.path.lstrip("/")  # never "//host": another site
        return urlunsplit(("", "", path, urlencode(rest) if rest else "", ""))

    def check_read(self, request: Request) -> None:
        if self.session_of(request) is None and not self.bearer_of(request):
            raise Refused(
                401,
                "Token needed",
                "this dashboard shows its pages to holders of its access token only: open "
                "the link `xor-ack dashboard` printed (it ends in ?token=...), or send "
                "Authorization: Bearer <token>",
            )

    def check_action(self, request: Request, form: dict[str, str], read_only: bool) -> None:
        """Everything a POST must satisfy, before anything is read or written."""
        session = self.session_of(request)
        if session is None:
            raise Refused(
                403,
                "Token needed",
                "actions need a session opened with the dashboard's token (its ?token= link)",
            )
        site = request.headers.get("sec-fetch-site")
        origin = request.headers.get("origin")
        if (site is not None and site not in ("same-origin", "none")) or (
            origin is not None and origin not in (_origin_of(request), *self.trusted_origins)
        ):
            raise Refused(403, "Cross-site request", "actions are taken from this dashboard only")
        given = form.get(CSRF_FIELD, "")
        if not hmac.compare_digest(given.encode(), self.csrf_for(session).encode()):
            raise Refused(
                403,
                "Form expired",
                "this form's CSRF token is missing or not this session's: reload the page "
                "and try again",
            )
        if read_only:
            raise Refused(403, "Read-only", "this dashboard runs with --read-only: no actions")


def _origin_of(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', '')}"
