"""A signal is never lost: not even when its handler runs inside a finalizer.

py4j releases Java objects from weakref callbacks; a SIGINT handled while one runs
raised ``Interrupted`` where Python prints an exception and drops it, and a whole run
went on to the end (seen once in the SIGINT test of ``test_interrupt.py``).
"""

from __future__ import annotations

import signal
import time

import pytest

from xor_ack_dynamodb.pipeline.interruption import Interrupted, _signals_interrupt


class SignalledInAFinalizer:
    def __del__(self) -> None:
        signal.raise_signal(signal.SIGTERM)  # the handler runs here, inside __del__


def test_an_interruption_dropped_by_a_finalizer_lands_in_the_run() -> None:
    reached = []
    with pytest.raises(Interrupted, match="SIGTERM"), _signals_interrupt():
        finalized = SignalledInAFinalizer()
        del finalized
        reached.append("after the finalizer")
        for _ in range(400):  # the run goes on: the interruption must reach it here
            time.sleep(0.005)
        reached.append("the end of the run")
    assert reached == ["after the finalizer"]


def test_the_handlers_and_the_hook_are_put_back() -> None:
    import sys

    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    hook = sys.unraisablehook
    with _signals_interrupt():
        assert sys.unraisablehook is not hook
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert sys.unraisablehook is hook


def test_py4j_logging_the_interruption_it_was_in_prints_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """py4j's ``send_command`` logs a ``KeyboardInterrupt`` with ``logging.exception`` on
    the root logger, then re-raises it: a signal landing in a Spark call on the main
    thread printed a traceback before the run's own last line."""
    import logging

    root = logging.getLogger()
    handler = logging.StreamHandler()  # as logging.exception's basicConfig would add
    root.addHandler(handler)
    try:
        with pytest.raises(Interrupted), _signals_interrupt():
            try:
                signal.raise_signal(signal.SIGINT)
                time.sleep(1)
            except KeyboardInterrupt:
                logging.exception("KeyboardInterrupt while sending command.")  # py4j's line
                raise
        logging.error("other errors are still logged")
    finally:
        root.removeHandler(handler)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "while sending command" not in err
    assert "other errors are still logged" in err
