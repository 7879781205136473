"""One dashboard's moving parts: the client, the stream follower, the counts, live notices.

:class:`Dashboard` is what a user makes (``Dashboard(table=...)``) and mounts
(``dashboard.app``).  Its background work (the DynamoDB client, the counting task, the
stream thread) starts with the app's lifespan, or on the first request when the app is
mounted inside another (Starlette does not run a mounted app's lifespan), and stops with
:meth:`close` / the lifespan's end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from xor_ack_dynamodb import XorAckDynamoDB, events
from xor_ack_dynamodb.dynamodb.aws import fail_fast_config
from xor_ack_dynamodb.errors import StreamNotEnabled, StreamViewConflict
from xor_ack_dynamodb.events.follow import arn_of

from .config import DashboardConfig, Send
from .counts import Count, Counts, Move
from .follower import Follower, StreamStatus
from .history import History, Story
from .inventory import Inventory
from .kept_cursors import KeptCursors
from .live import Broadcaster
from .render import Renderer
from .security import TOKEN_PARAM, Guard
from .windows import Windows, WindowsView

#: Seconds a request of a page waits for DynamoDB's first byte (its three attempts:
#: ``fail_fast_config``): a DynamoDB that takes the connection and does not answer (a JVM
#: in a long pause, a hung proxy) is the page's 502 in about twenty seconds, not minutes.
READ_TIMEOUT = 5.0
#: Connections the client keeps: the background count's Queries (a status's 16 shards at
#: once) leave the pages' requests room, where botocore's 10 made them queue behind it.
CONNECTIONS = 64

log = logging.getLogger("xor_ack_dynamodb.dashboard")


class Dashboard:
    """A dashboard of one chain table; ``.app`` is its ASGI application.

    Takes a :class:`DashboardConfig`, or its fields as keyword arguments.
    """

    def __init__(self, config: DashboardConfig | None = None, **options: Any) -> None:
        self.config = replace(config, **options) if config else DashboardConfig(**options)
        public = self.config.public
        self.guard = Guard(
            self.config.token,
            self.config.trusted_hosts,
            trusted_origins=() if public is None else (public.origin,),
        )
        self.renderer = Renderer(
            table=self.config.table, read_only=self.config.read_only, page="", csrf=""
        )
        self.clock: Callable[[], float] = time.time
        self._fresh_parts()
        self.cursors = KeptCursors()
        self._ack: XorAckDynamoDB | None = None
        self._inventory: Inventory | None = None
        self._counts: Counts | None = None
        self._follower: Follower | None = None
        self._stack: AsyncExitStack | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._starting = asyncio.Lock()
        self.replay_send: Send | None = self.config.replay_send
        self._view: tuple[float, WindowsView] | None = None
        from .app import build_app  # the routes need the class: built after it

        self.app = build_app(self)

    @property
    def token(self) -> str:
        return self.config.token

    def secure_cookie(self, request: Request) -> bool:
        """Is the session cookie ``Secure``: the request came over https, or people open the
        dashboard at an https ``public_url`` (a proxy that ends TLS talks http to it)."""
        public = self.config.public
        return request.url.scheme == "https" or (public is not None and public.secure)

    def login_url(self, base_url: str) -> str:
        """``base_url`` (where the dashboard is served) with the token: opens a session.

        The token is URL-encoded: ``#``, ``&``, ``+`` or ``%`` in it would cut or change it."""
        return f"{base_url.rstrip('/')}/?{urlencode({TOKEN_PARAM: self.config.token})}"

    # -- the parts the pages use ----------------------------------------------------------

    @property
    def ack(self) -> XorAckDynamoDB:
        if self._ack is None:
            raise RuntimeError("the dashboard is not started")
        return self._ack

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            raise RuntimeError("the dashboard is not started")
        return self._inventory

    def counts(self) -> list[Count]:
        return [] if self._counts is None else self._counts.now()

    @property
    def counts_error(self) -> str | None:
        return None if self._counts is None else self._counts.error

    def request_count(self) -> None:
        if self._counts is not None:
            self._counts.request()

    def windows_view(self) -> WindowsView:
        """The windows, computed at most once a second (a page, its fragment, the bench)."""
        now = self.clock()
        if self._view is not None and now - self._view[0] < 1.0:
            return self._view[1]
        view = self._follower.view(now) if self._follower else self.windows.view(now)
        self._view = (now, view)
        return view

    def story(self, tag: str) -> Story | None:
        if self._follower is not None:
            found: Story | None = self._follower.story(tag)
            return found
        return self.history.of(tag)

    # -- starting and stopping --------------------------------------------------------------

    async def ensure_started(self) -> None:
        if self._stack is not None:
            return
        async with self._starting:
            if self._stack is None:
                await self._start()

    async def _start(self) -> None:
        config = self.config
        stack = AsyncExitStack()
        try:
            self._ack = await stack.enter_async_context(
                XorAckDynamoDB.connect(
                    table=config.table,
                    partition_key=config.partition_key,
                    endpoint_url=config.endpoint_url,
                    region_name=config.region_name,
                    # a page waits on each request: DynamoDB down is its 502 in seconds
                    config=fail_fast_config(
                        read_timeout=READ_TIMEOUT, max_pool_connections=CONNECTIONS
                    ),
                )
            )
            if self.replay_send is None and config.replay_queue_url and not config.read_only:
                from xor_ack_dynamodb.fleet import SqsSender, sqs_client

                sqs = await stack.enter_async_context(
                    sqs_client(endpoint=config.sqs_endpoint_url, region_name=config.region_name)
                )
                self.replay_send = SqsSender(sqs, config.replay_queue_url)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        self._inventory = Inventory(
            self._ack.client, config.table, config.partition_key, self.clock
        )
        self._counts = Counts(
            self._inventory, config.count_every, self.clock, on_change=self.live.overview
        )
        self._tasks.append(asyncio.create_task(self._counts.run(), name="dashboard-counts"))
        self._tasks.append(asyncio.create_task(self._start_stream(), name="dashboard-stream"))

    async def _start_stream(self) -> None:
        """Find the table's stream and start following it (or say why not, and retry)."""
        while True:
            try:
                description = await self.ack.client.describe_table(TableName=self.config.table)
                try:
                    arn = arn_of(description["Table"])
                except StreamNotEnabled:
                    self.stream.error = (
                        f"table {self.config.table} has no stream: no windows, no histories "
                        "(`xor-ack table upgrade` adds it)"
                    )
                    return
                except StreamViewConflict as exc:  # its records lack what the events need
                    self.stream.error = f"no windows, no histories: {exc}"
                    return
                streams = await asyncio.to_thread(
                    events.streams_client, self.config.endpoint_url, self.config.region_name
                )
                follower = Follower(
                    streams,
                    self.config.partition_key,
                    self.windows,
                    self.history,
                    self._on_records,
                    asyncio.get_running_loop(),
                    self.config.stream_interval,
                    self.stream,
                )
                follower.start(str(arn))
                self._follower = follower
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.stream.error = f"{type(exc).__name__}: {exc}"
                log.warning("finding the table's stream failed: %s", exc)
                await asyncio.sleep(5.0)

    def _on_records(self, moves: list[Move], tags: set[str], live: bool) -> None:
        if self._counts is not None:
            self._counts.note(moves)
        self._view = None
        if live:
            self.live.changed(tags)
            self.live.overview()

    async def close(self) -> None:
        """Stop the background work and close the client."""
        self.live.close()
        for task in self._tasks:
            task.cancel()
        if self._tasks:  # a cancel of close() itself is raised (suppressing it here hid it)
            await asyncio.wait(self._tasks)
        for task in self._tasks:  # what one raised before the cancel: its own log line had it
            if not task.cancelled():
                task.exception()
        self._tasks.clear()
        if self._follower is not None:
            await asyncio.to_thread(self._follower.stop)
            self._follower = None
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None
        self._ack = None
        self._fresh_parts()  # a start after this reads the stream again from its start

    def _fresh_parts(self) -> None:
        """What the stream fills, and the live updates, empty: one set per start."""
        self.live = Broadcaster()
        self.windows = Windows()
        self.history = History(self.config.history_tags, self.config.history_entries)
        self.stream = StreamStatus()
        self._counts = None
        self._view = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Dashboard]:
        """Started on entry, closed on exit: for a host app's lifespan."""
        await self.ensure_started()
        try:
            yield self
        finally:
            await self.close()

    @asynccontextmanager
    async def lifespan(self, app: object) -> AsyncIterator[None]:
        """A Starlette ``lifespan=`` that runs this dashboard with the host app (it adds
        nothing to the app's state)."""
        async with self.running():
            yield
