"""The operator's actions: fail a chain, touch it, sweep now, replay a fleet job.

Each is two steps: a GET that shows what will happen and asks to confirm (a form), and
the POST of that form, checked before anything is read or written: a session opened
with the token, the session's CSRF token, the same origin, not ``--read-only``, a form
of at most 64 KiB, every field valid.  A refused POST changes nothing.  Each action is
one call of the public client, so its guarantees are the library's: ``fail`` fails only
the generation the page showed (``chain_id``), ``touch`` only extends that generation's
deadline (and is refused past it, where the library's would fail the chain), a
sweep fails each overdue chain once, a replay replays only the generation the page showed
(or none, if it showed none), refuses a live or acked chain (and, before it writes, a
payload its root message cannot carry: ``root_payload``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from xor_ack_dynamodb import ChainState
from xor_ack_dynamodb.dynamodb.sweeper import sweep_async
from xor_ack_dynamodb.errors import ChainFailed, ChainTimedOut, TagNotFound
from xor_ack_dynamodb.fleet import Envelope, Fleet, Message

from .config import Send
from .pages import context, dashboard_of, finished_job, fleet_job, status_word, tag_param
from .render import base_of, url
from .root_payload import check_root
from .security import Refused

MAX_FORM = 64 * 1024
MAX_REASON = 1024
MAX_PAYLOAD = 32 * 1024


async def form_of(request: Request) -> dict[str, str]:
    """The POSTed form (``application/x-www-form-urlencoded``), read and checked."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise Refused(415, "Unsupported form", "actions take the dashboard's own forms only")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise Refused(413, "Form too large", f"a form is at most {MAX_FORM // 1024} KiB")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(400, "Bad form", "the form is not UTF-8 URL-encoded") from exc
    form: dict[str, str] = {}
    for name, value in pairs:
        form.setdefault(name, value)
    return form


async def checked_form(request: Request) -> dict[str, str]:
    dashboard = dashboard_of(request)
    form = await form_of(request)
    dashboard.guard.check_action(request, form, dashboard.config.read_only)
    return form


def _seconds(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise Refused(400, f"Bad {name}", f"{name} is a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise Refused(400, f"Bad {name}", f"{name} is a number of seconds above 0")
    return value


def _refuse_when_read_only(request: Request) -> None:
    if dashboard_of(request).config.read_only:
        raise Refused(403, "Read-only", "this dashboard runs with --read-only: no actions")


async def confirm(request: Request) -> Response:
    """GET /actions/{action}: what the action will do, and its form."""
    _refuse_when_read_only(request)
    dashboard = dashboard_of(request)
    action = request.path_params["action"]
    values: dict[str, Any] = {"action": action}
    if action == "sweep":
        values["overdue"] = next((c for c in dashboard.counts() if c.status == "overdue"), None)
    else:
        tag = tag_param(request)
        state = await dashboard.ack.get(tag)
        values.update(tag=tag, state=state, word=status_word(state, dashboard.clock()))
        if action == "replay":
            if not dashboard.config.replays:
                raise Refused(404, "No replays", "this dashboard was started without a queue")
            _refuse_unless_fleet_job(dashboard, tag, state)
            values["payload_given"] = dashboard.config.replay_payload is not None
    return dashboard.renderer.render(request, "confirm.html", context(request, "confirm", **values))


def _refuse_unless_fleet_job(dashboard: Any, tag: str, state: ChainState | None) -> None:
    """Replay is for a job ``Fleet.submit`` made (what the chain's page offers it for): a
    chain another writer made, or none at all, is not replaced by a fleet job."""
    story = dashboard.story(tag)
    if finished_job(state, story):
        raise Refused(
            409,
            "Nothing to replay",
            f"the job {tag!r} acked (every message of it done) before its chain was removed;"
            " it is not run again",
        )
    if not fleet_job(tag, state, story):
        raise Refused(
            409,
            "Not a fleet job",
            f"{tag!r} was not made by Fleet.submit (its first stamp is not its root "
            "message's), so it is not replayed as one; replay it where it was made",
        )


def _chain_id(form: dict[str, str], action: str) -> bytes:
    """The generation of the tag the page showed (``chain_id``, hex): the one acted on."""
    try:
        chain_id = bytes.fromhex(form.get("chain_id", ""))
    except ValueError:
        raise Refused(400, "Bad chain id", "chain_id is the hex id the page showed") from None
    if not chain_id:
        raise Refused(400, "No chain id", f"{action} a chain from its page (it names the chain)")
    return chain_id


def _shown_generation(form: dict[str, str]) -> bytes:
    """The replay form's ``chain_id``: the generation its page showed, empty if none."""
    if "chain_id" not in form:
        raise Refused(400, "No chain id", "replay a job from its page (it names the chain)")
    try:
        return bytes.fromhex(form["chain_id"])
    except ValueError:
        raise Refused(400, "Bad chain id", "chain_id is the hex id the page showed") from None


def _back_to_chain(request: Request, tag: str, done: str) -> Response:
    return RedirectResponse(url(base_of(request), "chain", tag=tag, done=done), status_code=303)


async def fail(request: Request) -> Response:
    form = await checked_form(request)
    dashboard = dashboard_of(request)
    tag = tag_param(request, form)
    reason = form.get("reason", "").strip() or "failed"
    if len(reason) > MAX_REASON:
        raise Refused(400, "Reason too long", f"a reason is at most {MAX_REASON} characters")
    chain_id = _chain_id(form, "fail")
    try:
        state = await dashboard.ack.fail(tag, reason, chain_id=chain_id)
    except ChainTimedOut as timed_out:  # past its deadline: failed "timeout" (the 409 says)
        if timed_out.failed_by_this_call:
            dashboard.request_count()
        raise
    except TagNotFound:
        # not the generation the page showed: a chain re-created since is left alone, and
        # is not "no chain" either: its page says so (a tag with no chain at all: the 404)
        now = await dashboard.ack.get(tag)
        if now is None or now.chain_id == chain_id:
            raise
        return _back_to_chain(request, tag, "recreated")
    dashboard.request_count()
    # an acked chain stays acked (zero wins): fail() returns it, and failed nothing
    return _back_to_chain(request, tag, "failed" if state.failed else "acked")


async def touch(request: Request) -> Response:
    form = await checked_form(request)
    dashboard = dashboard_of(request)
    tag = tag_param(request, form)
    text = form.get("timeout", "").strip()
    timeout = _seconds(text, "timeout") if text else None
    chain_id = _chain_id(form, "touch")
    state = await dashboard.ack.get(tag)
    if state is not None and state.chain_id != chain_id:  # a new chain: not the one shown
        return _back_to_chain(request, tag, "recreated")
    if state is not None and state.overdue(dashboard.clock()):  # touch() would fail it
        raise Refused(
            409,
            "Past its deadline",
            "a chain past its deadline cannot be touched: no stamp lands on it any more "
            "(Fail or Sweep now fail it, reason timeout); nothing was written",
        )
    try:
        # the write is conditioned on the generation shown: one re-created since is left alone
        touched = await dashboard.ack.touch(tag, timeout=timeout, chain_id=chain_id)
    except (TagNotFound, ChainFailed) as refused:
        # no live chain: acked or failed since the page showed it, re-created, or none at
        # all (the 404)
        if isinstance(refused, ChainTimedOut) and refused.failed_by_this_call:
            dashboard.request_count()
            raise  # past its deadline as it was written: this touch failed it (the 409 says)
        now = await dashboard.ack.get(tag)
        if now is None:
            raise
        if now.chain_id != chain_id:
            return _back_to_chain(request, tag, "recreated")
        raise Refused(
            409,
            "Chain closed",
            f"the chain is {'acked' if now.acked else 'failed'} now: a closed chain takes no "
            "touch; nothing was written",
        ) from None
    dashboard.request_count()
    # touch() only extends: a deadline already later, or none, is left as it was
    moved = state is None or touched.deadline != state.deadline
    return _back_to_chain(request, tag, "touched" if moved else "kept")


async def sweep(request: Request) -> Response:
    await checked_form(request)
    dashboard = dashboard_of(request)
    # the chains it could not fail and a page of the index unread: the page says what it did
    swept = await sweep_async(dashboard.ack.sweep())
    unswept = {tag: f"{type(exc).__name__}: {exc}" for tag, exc in swept.errors.items()}
    dashboard.request_count()
    values = context(
        request,
        "swept",
        failed=swept.failed,
        unswept=unswept,
        stopped=None if swept.stopped is None else str(swept.stopped),
    )
    return dashboard.renderer.render(request, "swept.html", values)


async def replay(request: Request) -> Response:
    form = await checked_form(request)
    dashboard = dashboard_of(request)
    send = dashboard.replay_send
    if not dashboard.config.replays or send is None:
        raise Refused(404, "No replays", "this dashboard was started without a queue")
    tag = tag_param(request, form)
    shown = _shown_generation(form)
    state = await dashboard.ack.get(tag)
    if state is not None and state.chain_id != shown:
        # replayed (or re-created) since the page showed it: not replayed once more
        return _back_to_chain(request, tag, "recreated")
    _refuse_unless_fleet_job(dashboard, tag, state)
    if dashboard.config.replay_payload is not None:
        payload = dashboard.config.replay_payload(tag)
    else:
        text = form.get("payload", "")
        if len(text) > MAX_PAYLOAD:
            raise Refused(400, "Payload too large", f"at most {MAX_PAYLOAD // 1024} KiB of JSON")
        try:
            payload = json.loads(text)
        except ValueError as exc:
            raise Refused(400, "Payload is not JSON", f"the root payload: {exc}") from None
        except RecursionError:  # "[[[[...": json.loads recurses once per level
            raise Refused(
                400, "Payload is not JSON", "the root payload is nested too deep to read"
            ) from None
    # what building and reading the root message does with the payload, before the chain
    # is created again: a payload it cannot carry was a 502 after that write
    made = dashboard.config.replay_payload is not None
    check_root(tag, payload, dashboard.ack.token_window, made=made)
    fleet = Fleet(dashboard.ack, handler=_never_handles, send=_RootSender(send))
    await fleet.replay(tag, payload)
    dashboard.request_count()
    return _back_to_chain(request, tag, "replayed")


class _RootSender:
    """A replay's sender: a root message it cannot send is said as such. The job's chain
    is created again by then (live, no message to run it), which an error page of
    DynamoDB's or of bad input would hide."""

    check: Callable[[], Awaitable[None]]  #: the sender's, if it has one: Fleet asks it first

    def __init__(self, send: Send) -> None:
        self.send = send
        check = getattr(send, "check", None)
        if check is not None:
            self.check = check

    async def __call__(self, envelopes: Sequence[Envelope]) -> None:
        try:
            await self.send(envelopes)
        except Exception as exc:
            raise Refused(
                502,
                "Root message not sent",
                f"the job's chain was created again, but its root message was not sent "
                f"({type(exc).__name__}: {exc}): fail the chain, then replay it again",
            ) from exc


def _never_handles(message: Message) -> None:  # pragma: no cover - a replay only submits
    raise RuntimeError("the dashboard's fleet only replays jobs")
