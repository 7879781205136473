"""A worker's process: the threads its plain handlers run in, and the signals that stop it.

``install_signal_handlers`` makes SIGTERM and SIGINT a graceful stop (``stop``: no more
receives, the messages in hand get ``shutdown_grace``) and a second one a stop at once
(``now``: the handlers still running are released to another worker without waiting out
the grace), as a user pressing Ctrl-C twice expects; a third ends the process at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class DaemonThreads(concurrent.futures.ThreadPoolExecutor):
    """An executor whose every call runs in a daemon thread of its own: a process whose
    loop uses it as its default executor (``loop.set_default_executor``) exits when its
    work is done, without waiting for a plain handler still blocked in its thread.

    A plain handler runs in a thread (``asyncio.to_thread``) that no cancellation stops;
    with asyncio's default executor, ``asyncio.run`` and the interpreter's exit wait for
    it, so a worker told to stop would outlive its ``shutdown_grace`` by as long as the
    handler blocks, after its message was released to another worker.  The threads are
    as many as the calls in flight: at most the worker's ``concurrency`` handlers.  (A
    ``ThreadPoolExecutor`` by type only, as ``set_default_executor`` requires: its pool
    of joined threads is never used.)
    """

    def submit(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to whoever awaits the call
                future.set_exception(exc)
            else:
                future.set_result(result)

        threading.Thread(target=run, name="xor-ack-worker-call", daemon=True).start()
        return future


def install_signal_handlers(stop: asyncio.Event, now: asyncio.Event | None = None) -> None:
    """SIGTERM and SIGINT set ``stop`` (a graceful shutdown) instead of killing the process;
    once it is set, another one sets ``now`` (``Worker.run``'s: stop without waiting)."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)

    def signalled() -> None:
        if stop.is_set() and now is not None:
            now.set()
            for sig in signals:  # a third one ends the process as the signal does
                loop.remove_signal_handler(sig)
        stop.set()

    for sig in signals:
        loop.add_signal_handler(sig, signalled)
