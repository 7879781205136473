"""``xor-ack chain``: create, stamp, touch, show, list, fail or delete chains by hand."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, get_args

import click

from ..chain import ChainState
from ..dynamodb import ListStatus
from ..errors import (
    BufferLengthsUnequal,
    ChainFailed,
    InvalidTimeout,
    InvalidTTL,
    TagNotFound,
    ZeroBufferNoOp,
)
from ..stamps import DEFAULT_NBYTES, MIN_NBYTES
from .chain_options import hex_stamp, reason_option, token_option
from .errors import UserError, ttl_refused
from .options import (
    Verbs,
    _settings,
    check_tag,
    choice_option,
    deadline_option,
    json_option,
    seconds_option,
)
from .show import _echo_pairs, _when, argument, escaped, shown

#: The largest random stamp ``chain create --bytes`` makes: one a chain's item holds
#: with its tokens (a stamp past a few hundred KB does not fit one)
MAX_CLI_NBYTES = 1024


def _state_word(state: ChainState, now: float | None = None) -> str:
    if state.acked:
        return "acked"
    if state.failed:
        return "failed"
    return "overdue" if state.overdue(now) else "pending"


def _state_dict(state: ChainState, now: float | None = None) -> dict[str, Any]:
    return {
        "tag": state.tag,
        "stamp": state.stamp.hex(),
        "state": _state_word(state, now),
        "acked": state.acked,
        "failed": state.failed,
        "reason": state.reason,
        "chain_id": state.chain_id.hex(),
        "version": state.version,
        "tokens": len(state.tokens),
        "created_at": state.created_at,
        "updated_at": state.updated_at,
        "acked_at": state.acked_at,
        "failed_at": state.failed_at,
        "expires_at": state.expires_at,
        "deadline": state.deadline,
        "idle_timeout": state.idle_timeout,
        "overdue": state.overdue(now),
    }


@contextmanager
def _refusals_said(ctx: click.Context, tag: str, stamp: bytes | None = None) -> Iterator[None]:
    """The library's refusals of a chain verb, with what to do in the command's words."""
    try:
        yield
    except ZeroBufferNoOp as exc:
        raise UserError(
            f"{exc.code}: STAMP {stamp.hex() if stamp else ''} is all zeros, which changes "
            "nothing: pass a stamp with a non-zero byte"
        ) from exc
    except BufferLengthsUnequal as exc:
        state = _settings(ctx).chains().get(tag)  # a read only, to say the length to use
        theirs = f"the chain's stamp is {len(state.stamp)} bytes" if state else "it differs"
        raise UserError(
            f"{exc.code}: STAMP is {len(stamp or b'')} bytes and {theirs}: pass a stamp as "
            f"long as the chain's (`xor-ack chain show {argument(tag)}` shows it)"
        ) from exc
    except TagNotFound as exc:
        raise UserError(
            f'{exc.code}: "{escaped(tag)}" has no live chain: it was never created, or was'
            f" acked, deleted or expired (`xor-ack chain show {argument(tag)}` tells which);"
            " nothing was written"
        ) from exc
    except InvalidTTL as exc:  # before any request: a usage error, in the options' words
        raise ttl_refused(exc) from exc


@click.group(cls=Verbs)
def chain() -> None:
    """Create, stamp, touch, show, list, fail or delete chains by hand (hex stamps)."""


@chain.command("create")
@click.argument("tag", callback=check_tag)
@click.argument("stamp", required=False, callback=hex_stamp)
@click.option(
    "--bytes",
    "nbytes",
    type=click.IntRange(min=MIN_NBYTES, max=MAX_CLI_NBYTES),
    default=DEFAULT_NBYTES,
    show_default=True,
    help="Size of the random stamp made when STAMP is omitted.",
)
@seconds_option("--ttl", "Delete the item after SECONDS (garbage collection, after any deadline).")
@deadline_option("--timeout", "Fail the chain if not acked within SECONDS.")
@deadline_option(
    "--idle-timeout",
    "Fail the chain if SECONDS pass without a stamp (each stamp moves the deadline).",
)
@click.pass_context
def chain_create(
    ctx: click.Context,
    tag: str,
    stamp: bytes | None,
    nbytes: int,
    ttl: float | None,
    timeout: float | None,
    idle_timeout: float | None,
) -> None:
    """Start chain TAG with STAMP (hex); a random stamp is made and printed if omitted.

    \b
    Example:
      xor-ack chain create job-1 --timeout 600 --ttl 86400 --table my-chains
    """
    value = stamp if stamp is not None else secrets.token_bytes(nbytes)
    with _refusals_said(ctx, tag, value):
        result = (
            _settings(ctx)
            .chains()
            .create(tag, value, ttl=ttl, timeout=timeout, idle_timeout=idle_timeout)
        )
    click.echo(f"{shown(tag)} created, state {result.hex()}")


@chain.command("stamp")
@click.argument("tag", callback=check_tag)
@click.argument("stamp", callback=hex_stamp)
@click.option(
    "--token",
    callback=token_option,
    help="Idempotency token (1-16 bytes): a re-sent stamp applies once.",
)
@click.pass_context
def chain_stamp(ctx: click.Context, tag: str, stamp: bytes, token: str | None) -> None:
    """XOR STAMP (hex) into chain TAG and print the new state.

    \b
    Example:
      xor-ack chain stamp job-1 9f86d081884c7d659a2feaa0c55ad015 --token worker-1
    """
    with _refusals_said(ctx, tag, stamp):
        result = _settings(ctx).chains().stamp(tag, stamp, token=token)
    click.echo(f"{shown(tag)} state {result.hex()} ({'acked' if result.acked else 'pending'})")


def _show(ctx: click.Context, tag: str, as_json: bool) -> None:
    state = _settings(ctx).chains().get(tag)
    if state is None:
        raise UserError(f'"{escaped(tag)}" does not exist (never created, deleted or expired)')
    now = time.time()
    if as_json:
        click.echo(json.dumps(_state_dict(state, now), indent=2))
        return
    pairs: list[tuple[str, object]] = [
        ("tag", shown(state.tag)),
        ("state", _state_word(state, now) + _reason(state)),
        ("stamp", state.stamp.hex()),
        ("version", state.version),
        ("created", _when(state.created_at)),
        ("updated", _when(state.updated_at)),
    ]
    if state.deadline is not None and state.live:
        pairs.append(("deadline", _when(state.deadline) + _from_now(state.deadline, now)))
    if state.idle_timeout is not None and state.live:
        pairs.append(("idle timeout", f"{state.idle_timeout:g} s (each stamp moves the deadline)"))
    if state.acked_at is not None:
        pairs.append(("acked", _when(state.acked_at)))
    if state.failed_at is not None:
        pairs.append(("failed", _when(state.failed_at)))
    pairs.append(("expires", _when(state.expires_at)))
    _echo_pairs(pairs)


def _reason(state: ChainState) -> str:
    """`` (REASON)`` after a state word, if the chain has a reason."""
    return f" ({shown(state.reason)})" if state.reason else ""


def _from_now(moment: float, now: float) -> str:
    left = moment - now
    return f" (in {left:.0f} s)" if left > 0 else f" (overdue by {-left:.0f} s)"


@chain.command("show")
@click.argument("tag", callback=check_tag)
@json_option()
@click.pass_context
def chain_show(ctx: click.Context, tag: str, as_json: bool) -> None:
    """Show chain TAG: state, deadline, times, reason (exit 1 if it does not exist).

    An open chain past its deadline shows as "overdue" until a sweep (or a late
    write) fails it with reason "timeout".

    \b
    Example:
      xor-ack chain show job-1 --table my-chains --json
    """
    _show(ctx, tag, as_json)


@chain.command("get")
@click.argument("tag", callback=check_tag)
@json_option()
@click.pass_context
def chain_get(ctx: click.Context, tag: str, as_json: bool) -> None:
    """Show chain TAG, as `chain show` does (exit 1 if it does not exist).

    \b
    Example:
      xor-ack chain get job-1 --table my-chains --json
    """
    _show(ctx, tag, as_json)


@chain.command("touch")
@click.argument("tag", callback=check_tag)
@deadline_option(
    "--timeout", "Move the deadline to now + SECONDS [default: the chain's idle timeout]."
)
@click.pass_context
def chain_touch(ctx: click.Context, tag: str, timeout: float | None) -> None:
    """Push chain TAG's deadline later (Storm's resetTimeout); never earlier.

    A chain created without --timeout or --idle-timeout has no deadline: it is
    left as it is, and the command says so.

    \b
    Example:
      xor-ack chain touch job-1 --timeout 300
    """
    try:
        with _refusals_said(ctx, tag):
            state = _settings(ctx).chains().touch(tag, timeout=timeout)
    except InvalidTimeout as exc:
        if timeout is not None:
            raise
        # the library's words name its call (touch(tag, timeout=...)); say the option
        raise UserError(
            f'InvalidTimeout: "{escaped(tag)}" has no idle timeout: pass --timeout SECONDS to '
            "say how far from now its deadline moves"
        ) from exc
    if state.deadline is None:  # the library returns such a chain as it is
        click.echo(
            f"{shown(tag)} has no deadline (created without --timeout or --idle-timeout): "
            "nothing moved"
        )
        return
    click.echo(f"{shown(tag)} deadline {_when(state.deadline)}")


@chain.command("list")
@choice_option(
    "--status",
    get_args(ListStatus),
    "open: not acked nor failed; overdue: open past the deadline; failed: tombstones.",
    "open",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most N chains.")
@json_option("Print one JSON object per chain.")
@click.pass_context
def chain_list(ctx: click.Context, status: ListStatus, limit: int | None, as_json: bool) -> None:
    """List open, overdue or failed chains from the inventory indexes (no scan).

    One Query per index shard and page, then the chains themselves, read
    consistently: what is listed is what the items say now.  Text output is one
    line per chain (tag, state, deadline or failure), then a count on stderr; a
    tag or reason with a newline, tab or other control character (or starting
    with a quote) is printed quoted and escaped, 'as\\nhere' (--json: as it is).

    \b
    Example:
      xor-ack chain list --status overdue --limit 50 --json
    """
    count = 0
    for state in _settings(ctx).chains().list_chains(status=status, limit=limit):
        now = time.time()  # after its page was read: as the listing judged it, or later
        count += 1
        if as_json:
            click.echo(json.dumps(_state_dict(state, now), separators=(",", ":")))
        elif state.failed:
            reason = shown(state.reason or "")
            click.echo(f"{shown(state.tag)}\tfailed\t{_when(state.failed_at)}\t{reason}")
        else:
            due = "-" if state.deadline is None else _when(state.deadline)
            click.echo(f"{shown(state.tag)}\t{_state_word(state, now)}\t{due}")
    if not as_json:
        click.echo(f"{count} {status} chain(s)", err=True)


@chain.command("fail")
@click.argument("tag", callback=check_tag)
@click.option(
    "--reason", default="failed", show_default=True, callback=reason_option, help="Why it failed."
)
@click.pass_context
def chain_fail(ctx: click.Context, tag: str, reason: str) -> None:
    """Close chain TAG as failed (an acked chain stays acked).

    \b
    Example:
      xor-ack chain fail job-1 --reason "worker lost"
    """
    try:
        state = _settings(ctx).chains().fail(tag, reason)
    except ChainFailed as exc:
        if exc.requested_reason is None or exc.failed_by_this_call:
            raise
        raise UserError(  # the library's words name its call (fail()); say the option
            f'{exc.code}: "{escaped(tag)}" was already failed ({escaped(exc.reason)}); --reason'
            f" {escaped(reason)!r} was not written: replay its input under a new chain"
        ) from exc
    click.echo(f"{shown(tag)} {_state_word(state)}{_reason(state)}")


@chain.command("delete")
@click.argument("tag", callback=check_tag)
@click.pass_context
def chain_delete(ctx: click.Context, tag: str) -> None:
    """Delete chain TAG's item.

    \b
    Example:
      xor-ack chain delete job-1
    """
    _settings(ctx).chains().delete(tag)
    click.echo(f"{shown(tag)} deleted")
