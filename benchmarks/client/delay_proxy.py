"""A TCP proxy that adds latency, run in a process of its own: ``DelayProxy`` starts it.

Every byte read from one side is written to the other ``delay / 2`` later (order kept,
reads not held up by the wait), so a request and its answer, one round trip, take
``delay`` longer than direct: ``--delay-ms 4`` is 4 ms per round trip, 2 ms each way.
Connection set-up is not delayed (the pools are warm before anything is measured).

It runs as a separate process because in the client's process the event loop, busy with
botocore, wakes it up to 5 ms late per hop, which would hide the delay it adds.  It binds
127.0.0.1 on a port the OS chooses and prints ``PORT <n>`` on stdout; it stops when its
stdin closes (the benchmark ends, or dies) or after ``--max-seconds``, and serves at most
``--max-connections`` connections at a time with bounded buffers per direction.

    python benchmarks/client/delay_proxy.py --upstream 127.0.0.1:8000 --delay-ms 4
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path

try:  # imported from the package, or run as the proxy's own process (a script)
    from .proxy_process import ProxyProcess
except ImportError:
    from proxy_process import ProxyProcess  # type: ignore[import-not-found, no-redef]

CHUNK = 65536
#: Chunks in flight per direction of one connection before reading stops (back-pressure).
QUEUED = 64


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it was read."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(QUEUED)

    async def send() -> None:
        broken = False  # the other side went away: keep taking chunks so reading never blocks
        while True:
            due, chunk = await queue.get()
            if not chunk:
                break
            wait = due - loop.time()
            if wait > 0 and not broken:
                await asyncio.sleep(wait)
            if broken:
                continue
            try:
                writer.write(chunk)
                await writer.drain()
            except OSError:
                broken = True
        with contextlib.suppress(OSError):
            if not broken and writer.can_write_eof():
                writer.write_eof()

    sender = asyncio.create_task(send())
    try:
        while chunk := await reader.read(CHUNK):
            await queue.put((loop.time() + delay, chunk))
    except OSError:
        pass
    finally:
        await queue.put((loop.time() + delay, b""))
    with contextlib.suppress(OSError):
        await sender


async def _serve(upstream: tuple[str, int], delay_ms: float, limit: int, lifetime: float) -> None:
    one_way = delay_ms / 2000
    gate = asyncio.Semaphore(limit)

    async def connection(c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        async with gate:
            try:
                u_reader, u_writer = await asyncio.open_connection(*upstream)
            except OSError:
                c_writer.close()
                return
            try:
                await asyncio.gather(
                    _pipe(c_reader, u_writer, one_way), _pipe(u_reader, c_writer, one_way)
                )
            except asyncio.CancelledError:
                pass  # the proxy stops with this connection still open: it just ends
            finally:
                for w in (u_writer, c_writer):
                    w.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    async with server:
        # Until the parent closes our stdin (or exits), at most ``lifetime`` seconds.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stdin.read(), lifetime)


class DelayProxy(ProxyProcess):
    """The proxy as a subprocess: ``with DelayProxy(endpoint, 4) as proxy: proxy.endpoint_url``."""

    name = "delay proxy"

    def __init__(
        self, upstream_url: str, delay_ms: float, *, max_seconds: float = 6 * 3600
    ) -> None:
        super().__init__()
        host_port = upstream_url.split("://", 1)[-1].rstrip("/")
        host, _, port = host_port.rpartition(":")
        self.upstream = (host, int(port))
        self.delay_ms = delay_ms
        self.max_seconds = max_seconds

    def __enter__(self) -> DelayProxy:
        self._start(
            str(Path(__file__).resolve()),
            "--upstream",
            f"{self.upstream[0]}:{self.upstream[1]}",
            "--delay-ms",
            str(self.delay_ms),
            "--max-seconds",
            str(self.max_seconds),
        )
        return self


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--upstream", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--delay-ms", type=float, default=4.0, help="added per round trip")
    parser.add_argument("--max-connections", type=int, default=1024)
    parser.add_argument("--max-seconds", type=float, default=6 * 3600, help="then it stops")
    args = parser.parse_args()
    host, _, port = args.upstream.rpartition(":")
    started = time.monotonic()
    asyncio.run(_serve((host, int(port)), args.delay_ms, args.max_connections, args.max_seconds))
    print(f"delay proxy stopped after {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
