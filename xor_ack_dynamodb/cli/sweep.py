"""``xor-ack sweep``: fail every overdue chain once, or keep doing it every SECONDS."""

from __future__ import annotations

import json
import sys
import time

import click
from botocore.exceptions import ClientError

from ..chain import ChainState
from ..dynamodb.aws import error_code
from ..dynamodb.loops import item_failed
from ..errors import SweepStopped
from ..sweeper import SweepSummary, sweep_once
from .errors import UserError, _one_line, explain
from .options import WAIT, Settings, Verb, _settings, json_option
from .show import _when, shown
from .signals import stop_on_signals as _stop_on_signals


def _said(exc: BaseException) -> str:
    """An error in one line: the user's kind (``explain``), else its type and message."""
    return explain(exc) or _one_line(f"{type(exc).__name__}: {exc}")


def _report(summary: SweepSummary, failed: list[ChainState], as_json: bool) -> None:
    if as_json:
        line = {"at": time.time(), **summary.as_dict()}
        click.echo(json.dumps(line, separators=(",", ":")))
        return
    for state in failed:
        reason = shown(state.reason or "")
        click.echo(f"{shown(state.tag)} failed ({reason}) at {_when(state.failed_at)}")
    click.echo(f"swept {summary.table}: {summary.failed} chain(s) failed ({summary.seconds:g} s)")


def _check_key(settings: Settings) -> None:
    """``TableMismatch`` (one ``error:`` line) if the table's key is not ``--partition-key``:
    a sweep finds that only at the first overdue chain, and one that finds none would say
    "0 chain(s) failed" of a table it cannot read.  A principal without DescribeTable (the
    sweeper's policy) sweeps without this check."""
    try:
        described = settings.client().describe_table(TableName=settings.table)["Table"]
    except ClientError as exc:
        if error_code(exc) in ("AccessDeniedException", "UnauthorizedOperation"):
            return
        raise
    settings.spec().check(described)


@click.command("sweep", cls=Verb)
@click.option(
    "--watch",
    type=WAIT,
    metavar="SECONDS",
    help="Sweep again every SECONDS until Ctrl-C or SIGTERM.",
)
@json_option("Print one JSON object per sweep.")
@click.pass_context
def sweep(ctx: click.Context, watch: float | None, as_json: bool) -> None:
    """Fail every chain past its deadline (reason "timeout"), once each.

    Safe with any number of sweepers at once: each chain is failed by one
    conditional write, so it is failed exactly once.  Prints the chains this
    sweep failed, then one summary line (--json: one object per sweep).  With
    --watch, sweeps every SECONDS and, on Ctrl-C or SIGTERM, ends with one
    "stopped" line and exit 0.  A chain that cannot be failed is one "error:" line
    and the sweep goes on (exit 1 without --watch); with --watch, an error after
    the first sweep is printed and the next sweep tries again.

    \b
    Example:
      xor-ack sweep --watch 60 --table my-chains
    """
    settings = _settings(ctx)
    _check_key(settings)
    chains = settings.chains()
    table = settings.table

    def once() -> tuple[int, int]:
        started = time.monotonic()
        made: list[ChainState] = []
        try:
            swept = sweep_once(chains, "sweep", made.append)  # a chain's error never ends it
        except KeyboardInterrupt:  # what it failed is said, as at its end
            _report(SweepSummary.of(table, made, time.monotonic() - started), made, as_json)
            click.echo(
                f"interrupted: {len(made)} overdue chain(s) failed before the sweep stopped;"
                " sweep again for the rest",
                err=True,
            )
            sys.exit(130)
        summary = SweepSummary.of(
            table,
            swept.failed,
            time.monotonic() - started,
            errors=swept.errors,
            stopped=swept.stopped,
        )
        _report(summary, swept.failed, as_json)
        for tag, exc in swept.errors.items():
            click.echo(f"error: {shown(tag)}: {_said(exc)} (left for the next sweep)", err=True)
        if swept.stopped is not None:  # the chains it failed are printed: now the error
            raise swept.stopped
        return summary.failed, len(swept.errors)

    if watch is None:
        _, left = once()
        if left:
            raise UserError(f"{left} overdue chain(s) could not be failed; sweep again")
        return
    total = sweeps = 0
    with _stop_on_signals() as stop:
        while True:
            try:
                total += once()[0]
            except Exception as exc:
                if isinstance(exc, SweepStopped):
                    total += len(exc.failed)
                if not sweeps:
                    raise  # the first sweep failed (no table, no access): say so and end
                # a later one is reported and tried again (throttling, a network blip, a
                # bug): the next sweep fails what this one left
                item_failed("sweep.watch", exc, quiet=True)
                click.echo(f"error: {_said(exc)} (sweeping again in {watch:g} s)", err=True)
            sweeps += 1
            if stop.wait(watch):
                break
    click.echo(
        f"stopped by {stop.signal} after {sweeps} sweep(s) of {table}: {total} chain(s) failed",
        err=True,
    )
