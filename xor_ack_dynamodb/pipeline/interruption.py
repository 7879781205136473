"""How a run ends: SIGINT and SIGTERM unwind it once, errors become one line, never a traceback.

Its last line says where the tracked files stand.
"""

from __future__ import annotations

import _thread
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from ..cli.errors import RefusedUsage, UserError, explain
from ..errors import XorAckError
from ..spark.errors import UntrackedRunFailed
from ..spark.output import said
from .errors import Refused, in_command_terms

#: Exit status of an interrupted run (128 + SIGINT, as shells report it).
INTERRUPTED = 130
#: Seconds after a dropped interruption before it is given again.
_REDELIVER_AFTER = 0.05


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the run unwinds (cancel jobs, stop Spark, clean up)."""


@contextmanager
def _signals_interrupt() -> Iterator[Callable[[], None]]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread, once.

    The first signal starts a clean stop; later ones are ignored so that the
    clean-up (cancel the jobs, remove the staging folder, stop the JVM and a
    local DynamoDB) is not cut short.  Yields a function that puts the handlers
    back in place (SparkContext installs its own SIGINT handler).

    A handler raises in whatever the main thread runs at that moment; in a
    finalizer or a weakref callback (py4j releases its Java objects from those)
    Python prints the exception and drops it.  Such a dropped interruption is
    given again (``_thread.interrupt_main``) so that it lands in the run's own
    code: a signal is never lost.
    """
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in signals}
    previous_hook = sys.unraisablehook

    def handler(signum: int, _frame: Any) -> None:
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    def dropped(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if not isinstance(exc, Interrupted):
            previous_hook(unraisable)
            return
        signum = signal.Signals[exc.args[0]] if exc.args else signal.SIGINT
        signal.signal(signum, handler)  # armed again for this one delivery
        # A moment later, from another thread: the main thread takes it once out of the
        # finalizer (were it in another one by then, this hook gives it again).
        again = threading.Timer(_REDELIVER_AFTER, _thread.interrupt_main, args=(signum,))
        again.daemon = True
        again.start()

    def install() -> None:
        for sig in signals:
            signal.signal(sig, handler)

    install()
    sys.unraisablehook = dropped
    quiet = _Unlogged()
    logging.getLogger().addFilter(quiet)
    try:
        yield install
    finally:
        logging.getLogger().removeFilter(quiet)
        sys.unraisablehook = previous_hook
        for sig, old in previous.items():
            signal.signal(sig, old)


class _Unlogged(logging.Filter):
    """Drops a log record of the interruption itself: py4j logs the ``KeyboardInterrupt``
    that lands in one of its calls on the main thread (``logging.exception``, with its
    traceback) before it lets it go on; the run's last line says what it did."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, Interrupted)


def _interrupted(exc: KeyboardInterrupt, job: Any, output: str) -> str:
    """The one line an interruption ends with: what state the tracked files are in."""
    from .progress import plural

    name = exc.args[0] if isinstance(exc, Interrupted) and exc.args else "SIGINT"
    report = job.report if job is not None else None
    files = 0 if report is None else max(report.listed, report.expected or 0)
    if report is None or not files:
        state = "no file was tracked yet"
    else:
        failed = report.failed_count
        done = report.acked + failed
        state = f"{report.acked:,} of {plural(files, 'file')} acked, {files - done:,} not finished"
        if failed:
            state += f", {failed:,} failed"
    if job is not None and job.committed:
        written = f"the counts had been written to {output}"
    else:
        written = f"nothing was written to {output}"
    return f"interrupted ({name}): {state}; {written}; re-run the same command"


def exit_now(code: int) -> None:
    """End the process with ``code`` at once, once an interrupted run has cleaned up.

    By then Spark's JVM, a DynamoDB Local the run started and the staging folder are
    gone, and the last line is printed.  A normal interpreter exit would still join
    every non-daemon thread and run the atexit handlers: once, under heavy load, the
    interrupt test saw a run print its last line and then not exit within 120 s.  What
    held it was not identified (a thread of py4j's Python-side server whose gateway the
    signal cut, or a request blocked on the stopped DynamoDB Local, are candidates);
    nothing is left for the exit to do but flush the standard streams.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def session_name(master: str | None, remote: str | None) -> str:
    """Where the run's Spark is, for the progress line."""
    if remote:
        return f"Spark Connect at {remote}"
    if master is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        return "spark-submit"
    return master or "local[*]"


@contextmanager
def ending(
    verbose: bool, interrupted: Callable[[KeyboardInterrupt], str]
) -> Iterator[Callable[[], None]]:
    """The body of a command: signals interrupt it once, its errors end in one line.

    An interruption prints ``interrupted(exc)`` and exits 130 at once (see
    :func:`exit_now`); a refusal exits 2; any other error exits 1 with its first
    line (Spark's own output only with ``verbose``).  Yields the function that puts
    the signal handlers back (SparkContext installs its own).
    """
    with _signals_interrupt() as reinstall:
        try:
            with in_one_line(verbose):
                yield reinstall
        except KeyboardInterrupt as exc:
            click.echo(interrupted(exc), err=True)
            exit_now(INTERRUPTED)


@contextmanager
def in_one_line(verbose: bool) -> Iterator[None]:
    """Errors of the body become the one line the command ends with, here and now.

    Wrap the part that runs while Spark is up in it: the text of Spark's exceptions
    (py4j's, PySpark's captured ones) is asked of its JVM, gone once the session stops.
    """
    try:
        yield
    except click.ClickException:
        raise
    except Exception as exc:
        raise _as_user_error(exc, verbose) from exc


def _as_user_error(exc: Exception, verbose: bool) -> click.ClickException:
    """The one line ``exc`` ends the command with: exit 2 for a refusal, 1 for the rest."""
    if isinstance(exc, Refused):
        refusal = in_command_terms(exc)
        return RefusedUsage(explain(refusal) or str(refusal))
    if isinstance(exc, FileNotFoundError):
        return UserError(str(exc))
    if isinstance(exc, UntrackedRunFailed):  # the command's user passed --no-tracking
        return UserError(str(explain(exc)).replace("(tracking=False)", "(--no-tracking)"))
    if isinstance(exc, (XorAckError, ClientError, BotoCoreError)):
        return UserError(explain(exc) or str(exc))
    hint = "" if verbose else " (run again with --verbose to see Spark's own output)"
    return UserError(f"{said(exc)}{hint}")
