"""What a dashboard is told: its table, its access token, what it may do, its limits.

:class:`DashboardConfig` is checked once, when it is made, so a dashboard that starts is
one whose settings make sense: a token when it listens beyond loopback, sizes above zero.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from xor_ack_dynamodb.dynamodb.aws import is_endpoint_url, is_region
from xor_ack_dynamodb.dynamodb.aws import is_loopback_host as is_loopback
from xor_ack_dynamodb.errors import InvalidArgument
from xor_ack_dynamodb.table import DEFAULT_TABLE, TableSpec

if TYPE_CHECKING:
    from xor_ack_dynamodb.fleet import Envelope

#: Sends a replayed job's root message (``xor_ack_dynamodb.fleet.SqsSender`` is one).
Send = Callable[[Sequence["Envelope"]], Awaitable[None]]
#: The Host names a dashboard bound to loopback answers to (anything else: DNS rebinding).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: A token shorter than this is refused: it guards every page and action.
MIN_TOKEN_LENGTH = 16
#: The port each scheme's URLs mean when they name none.
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: The longest ``count_every`` and ``stream_interval``: a day (a wait must be one a
#: thread can take; the command's options stop there too).
MAX_INTERVAL = 86_400.0


class ConfigError(InvalidArgument):
    """A dashboard setting that cannot work (a bind address without a token, a size of 0).

    An ``InvalidArgument`` (so an ``XorAckError``, and a ``ValueError`` as before)."""


def _host_name(host: str) -> str:
    """``host`` as a ``Host`` header names it: an address in its canonical form."""
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return host.lower()


def _ascii_host(host: str) -> str | None:
    """``host`` as browsers name it in ``Origin`` and ``Host``: an internationalised name in
    its ASCII form (``bücher.example`` is ``xn--bcher-kva.example``); None if it has none."""
    if host.isascii():
        return host
    import idna  # the WHATWG URL rules browsers follow (Python's "idna" codec is IDNA 2003:
    # it spells "straße" as "strasse", a browser "xn--strae-oqa")

    try:
        return idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except idna.IDNAError:
        return None


@dataclass(frozen=True)
class PublicUrl:
    """Where people open a dashboard that a proxy serves (``--public-url``): an http(s)
    origin and, if the proxy serves it under one, a path prefix.

    Its origin is accepted on actions (``Origin``), its host name in ``Host``, and the
    printed link names it.  The proxy passes requests on without the prefix.
    """

    origin: str
    host: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> PublicUrl:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"public_url {url!r} is not a URL: {exc}") from exc
        problem = None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problem = "it must start with https:// (or http://) and a host name"
        elif parts.username is not None or parts.password is not None:
            problem = "it must not carry a user name or password"
        elif parts.query or parts.fragment or url.endswith(("?", "#")):
            problem = "it must not carry a query (?...) or a fragment (#...)"
        elif any(not segment for segment in parts.path.strip("/").split("/")[1:]):
            problem = "its path must not hold empty segments (//)"
        elif not parts.path.isascii() or "%" in parts.path:
            # The server names its prefix in ASCII on every request, as the proxy strips it.
            problem = "its path must be plain ASCII (letters, digits, - . _ ~ /)"
        if problem is not None:
            raise ConfigError(
                f"public_url {url!r}: {problem}; give the address people open, as "
                "https://chains.example.com or https://example.com/chains"
            )
        host = _ascii_host(parts.hostname or "")
        if host is None:
            raise ConfigError(
                f"public_url {url!r}: its host name is no valid internationalised domain "
                "name; give it as browsers send it (xn--...)"
            )
        shown = f"[{host}]" if ":" in host else host
        if port == _DEFAULT_PORTS[parts.scheme]:  # a browser's Origin never names it
            port = None
        netloc = shown if port is None else f"{shown}:{port}"
        prefix = parts.path.rstrip("/")
        return cls(origin=f"{parts.scheme}://{netloc}", host=host, prefix=prefix)

    @property
    def secure(self) -> bool:
        return self.origin.startswith("https://")

    def __str__(self) -> str:
        return f"{self.origin}{self.prefix}/"


def new_token() -> str:
    """A random access token (32 URL-safe characters, 192 bits)."""
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class DashboardConfig:
    """The settings of one dashboard; see docs/dashboard.md.

    ``token`` guards every page and action (``None``: a random one, see
    :attr:`token`).  ``allowed_hosts``: the ``Host`` names requests may carry (``None``:
    any; a dashboard bound to loopback answers to :data:`LOOPBACK_HOSTS` only).
    ``count_every``: the least seconds between two counts of the indexes (a count of
    100,000 entries takes a few seconds on DynamoDB Local, and the next waits five times
    as long as the last took).  ``replay_send``: how a fleet job's replay sends its root
    message; without it (and without ``replay_queue_url``) replays are not offered.
    """

    table: str = DEFAULT_TABLE
    partition_key: str = TableSpec().partition_key
    endpoint_url: str | None = None
    region_name: str | None = None
    token: str = field(default_factory=new_token, repr=False)
    read_only: bool = False
    allowed_hosts: tuple[str, ...] | None = None
    count_every: float = 5.0
    page_size: int = 50
    #: Query requests one list page may send (a filter that matches little stops there).
    query_budget: int = 64
    #: Tags whose history (from the stream) is kept, and entries per tag.
    history_tags: int = 100_000
    history_entries: int = 40
    #: Seconds between two reads of the stream's shards once caught up.
    stream_interval: float = 0.5
    replay_send: Send | None = field(default=None, repr=False)
    replay_queue_url: str | None = None
    sqs_endpoint_url: str | None = None
    #: How a replay's root payload is made from the tag (else the form asks for JSON).
    replay_payload: Callable[[str], Any] | None = field(default=None, repr=False)
    #: Where people open it when a proxy serves it (``https://chains.example.com``, with a
    #: path prefix if the proxy serves it under one): see :class:`PublicUrl`.
    public_url: str | None = None

    def __post_init__(self) -> None:
        TableSpec(name=self.table, partition_key=self.partition_key)  # InvalidTableSpec
        if self.public_url is not None:
            if not isinstance(self.public_url, str):
                raise ConfigError(f"public_url must be a str, not {self.public_url!r}")
            _ = self.public  # ConfigError now, not at the first request
        if not isinstance(self.token, str) or len(self.token) < MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"the access token must be at least {MIN_TOKEN_LENGTH} characters "
                "(leave it out for a random one)"
            )
        if (
            not self.token.isascii()
            or not self.token.isprintable()
            or any(c.isspace() for c in self.token)
        ):  # a header carries ASCII: scripts send it as ``Authorization: Bearer``
            raise ConfigError("the access token must be printable ASCII, without spaces")
        for name in ("count_every", "stream_interval"):
            value = getattr(self, name)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not (number and 0 < value <= MAX_INTERVAL):
                raise ConfigError(
                    f"{name} must be a number of seconds above 0 and at most "
                    f"{MAX_INTERVAL:g}, not {value!r}"
                )
        if self.region_name is not None and not is_region(self.region_name):
            raise ConfigError(
                f"region_name {self.region_name!r} is not an AWS region, e.g. us-east-1"
            )
        for name in ("endpoint_url", "replay_queue_url", "sqs_endpoint_url"):
            value = getattr(self, name)
            if value is not None and not is_endpoint_url(value):
                raise ConfigError(
                    f"{name} {value!r} is not an http(s) URL, e.g. http://127.0.0.1:8000"
                )
        if self.allowed_hosts is not None:
            object.__setattr__(self, "allowed_hosts", _host_names(self.allowed_hosts))
        for name, least, most in (
            ("page_size", 1, 500),
            ("query_budget", 16, 10_000),
            ("history_tags", 1, 10_000_000),
            ("history_entries", 2, 10_000),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
                raise ConfigError(f"{name} must be an int from {least} to {most}, not {value!r}")

    @cached_property
    def public(self) -> PublicUrl | None:
        """``public_url``, parsed once (``ConfigError`` if it is not an http(s) address)."""
        return None if self.public_url is None else PublicUrl.parse(self.public_url)

    @property
    def trusted_hosts(self) -> tuple[str, ...] | None:
        """``allowed_hosts`` and the public URL's host (``None``: any host)."""
        public = self.public
        if self.allowed_hosts is None or public is None:
            return self.allowed_hosts
        return tuple(dict.fromkeys((*self.allowed_hosts, public.host)))

    @property
    def replays(self) -> bool:
        """Does this dashboard offer a fleet job's replay?"""
        return not self.read_only and (
            self.replay_send is not None or self.replay_queue_url is not None
        )


def _host_names(hosts: object) -> tuple[str, ...]:
    """``allowed_hosts`` as the Host check compares them: lower case, an IPv6 address
    without its brackets; ``ConfigError`` unless it is a list or tuple of host names."""
    if not isinstance(hosts, list | tuple) or not all(
        isinstance(h, str) and h.strip("[]") for h in hosts
    ):
        raise ConfigError(
            f"allowed_hosts must be a tuple of host names, e.g. ('chains.example.com',), "
            f"not {hosts!r}"
        )
    return tuple(h.lower().removeprefix("[").removesuffix("]") for h in hosts)


def bind_check(host: str, token_given: bool) -> tuple[str, ...] | None:
    """The Host names to accept when serving on ``host``; ``ConfigError`` if it needs a token.

    Loopback: only the loopback names and ``host`` itself (``127.0.0.2``: the link names
    it); a page of another site that resolves its own name to a loopback address is
    refused.  Any other address: reachable from elsewhere, so only with a token the
    operator chose and can hand on (``--token`` or its environment variable).
    """
    if is_loopback(host):
        return tuple(dict.fromkeys((*LOOPBACK_HOSTS, _host_name(host))))
    if not token_given:
        raise ConfigError(
            f"serving on {host} makes the dashboard reachable from other machines: give it "
            "an access token (--token or XOR_ACK_DASHBOARD_TOKEN, at least "
            f"{MIN_TOKEN_LENGTH} characters), or serve on 127.0.0.1"
        )
    return None
