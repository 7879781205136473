"""Ctrl-C in a test: a ``KeyboardInterrupt`` raised in the main thread while it waits in a
call, as the terminal's SIGINT would, at the moment the test chooses."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any


def interrupted(
    call: Callable[[], object],
    when: Callable[[], bool],
    *,
    first: Callable[[], object] = lambda: None,
) -> BaseException | None:
    """Run ``call`` in this (the main) thread and interrupt it once ``when()`` holds
    (polled every 5 ms, 10 s at most): a signal whose handler runs ``first()``, then raises
    ``KeyboardInterrupt``.  What ``call`` raised, or None."""
    main = threading.get_ident()
    calling = threading.Event()
    sending = threading.Lock()  # the signal is sent only while ``call`` runs

    def interrupt() -> None:
        deadline = time.monotonic() + 10
        while not when() and time.monotonic() < deadline and calling.is_set():
            time.sleep(0.005)
        with sending:
            if calling.is_set():
                signal.pthread_kill(main, signal.SIGUSR1)

    def on_signal(*_: Any) -> None:
        first()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGUSR1, on_signal)
    interrupter = threading.Thread(target=interrupt, daemon=True)
    calling.set()
    try:
        interrupter.start()
        try:
            call()
        except BaseException as exc:
            return exc
        finally:
            with sending:  # a call that ended first: no signal after it, into another test
                calling.clear()
        return None
    finally:
        interrupter.join()
        signal.signal(signal.SIGUSR1, previous)
