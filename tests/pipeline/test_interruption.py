"""A signal is never lost: not even when its handler runs inside a finalizer.

py4j releases Java objects from weakref callbacks; a SIGINT handled while one runs
raised ``Interrupted`` where Python prints an exception and drops it, and a whole run
went on to the end (seen once in the SIGINT test of ``test_interrupt.py``).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

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


_SIGNAL_WHILE_LISTING = """
import os, signal, sys, time
from xor_ack_dynamodb.pipeline import wordcount_command as command

real = command.list_local
SIGNAL = getattr(signal, sys.argv[1])

def slow_listing(root):  # a large INPUT on a network file system: the user gives up
    os.kill(os.getpid(), SIGNAL)
    time.sleep(2)
    return real(root)

command.list_local = slow_listing
from xor_ack_dynamodb.pipeline.cli import main
sys.argv = ["xor-ack", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_while_input_is_listed_ends_with_130_and_one_line(
    tmp_path: Path, signame: str
) -> None:
    """The checks before Spark list all of INPUT; a signal then was click's "Aborted!"
    (exit 1) or a silent death (SIGTERM), not the interruption's one line and 130."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "a.txt").write_text("ok\n")
    args = ["wordcount", str(inbox), "-o", str(tmp_path / "counts")]
    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_WHILE_LISTING, signame, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"interrupted ({signame})"), lines
    assert not (tmp_path / "counts").exists()
