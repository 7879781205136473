"""Errors of the fleet (envelopes, pages of evicted tokens, replay); all are ``XorAckError``."""

from __future__ import annotations

from ..errors import InvalidArgument, XorAckError, _TagError


class InvalidEnvelope(XorAckError):
    """A message body is not a fleet envelope (JSON with tag, chain, id, sent, payload).

    Raised before any write; the message changes nothing.  A worker leaves such a
    message to the queue's redrive policy, which moves it to the dead-letter queue.
    """


class HandlerCancelled(XorAckError):
    """A handler raised ``CancelledError`` though its message was not being cancelled (a
    future it awaited was cancelled by someone else): a failure of that message alone, as
    any exception a handler raises; it is delivered again after a back-off.  Raised from
    the ``CancelledError``.  A worker or a Lambda function that is stopping still gets
    its own cancellation."""

    def __init__(self, message_id: str) -> None:
        super().__init__(
            f"the handler of message {message_id} raised CancelledError (an awaited future "
            "was cancelled): the message failed and is delivered again"
        )
        self.message_id = message_id


class InvalidPayload(InvalidArgument):
    """A job's payload its root message cannot carry to a worker (``Fleet.submit``,
    ``replay``): not JSON data, or nested deeper than ``payloads.MAX_DEPTH`` levels.
    Raised before the job's chain is made.  ``.why``: what is wrong with it."""

    def __init__(self, why: str, limit: int) -> None:
        super().__init__(
            f"the job's payload {why}: pass JSON data (dicts, lists, str, numbers, bools, "
            f"None) at most {limit} levels deep; no chain was made"
        )
        self.why = why


class InvalidChildren(_TagError, TypeError):
    """A handler returned something that is not its children's payloads: a str, bytes or
    a dict (iterable, but each character, byte or key would have been a child job), no
    iterable at all, or a child whose payload is no JSON data (``.child``: its index).
    The handler's mistake, the same on every receive: no child is sent, the message's
    stamp is not written, and ``Fleet.handle`` fails the job's chain (this generation)
    with ``.reason`` before it raises.  ``.returned``: the type's name (the child's, for
    a child).  Also a ``TypeError``.
    """

    def __init__(
        self, tag: str, message_id: str, returned: str, *, child: int | None = None, why: str = ""
    ) -> None:
        self.returned = returned
        self.child = child
        #: What the job's chain is failed with.
        self.reason = (
            f"the handler's child {child} of message {message_id} {why}: return JSON "
            "data (dicts, lists, str, numbers, bools, None) as each child's payload"
            if child is not None
            else f"the handler returned a {returned} for message {message_id}, not its children"
            f"{why}: return a list of the children's payloads ([] or None for no children)"
        )
        super().__init__(
            tag,
            f'"{tag}": {self.reason}. The job is failed and no child was sent; fix the '
            "handler, then replay the job (Fleet.replay)",
        )


class HandlerExited(XorAckError):
    """A handler called ``sys.exit()`` (a click command's ``main()`` does): a failure of
    that message alone, delivered again after a back-off; the worker goes on.  Raised from
    the ``SystemExit`` (``.status``: what it was given)."""

    def __init__(self, message_id: str, status: object) -> None:
        super().__init__(
            f"the handler of message {message_id} called sys.exit({status!r}): the message "
            "failed and is delivered again (return from the handler, or raise, instead)"
        )
        self.message_id = message_id
        self.status = status


class ContinuationExited(XorAckError):
    """A job's continuation called ``sys.exit()`` (a click command's ``main()`` does): the
    continuation failed, its ``done`` marker not written, as for any exception of it; the
    worker goes on, and the message that acked the job is delivered again after a back-off
    and the continuation runs then.  Raised from the ``SystemExit`` (``.status``: what it
    was given)."""

    def __init__(self, tag: str, status: object) -> None:
        super().__init__(
            f"the continuation of job {tag!r} called sys.exit({status!r}): it runs again "
            "when the message that acked the job comes back (return, or raise, instead)"
        )
        self.tag = tag
        self.status = status


class ContinuationCancelled(XorAckError):
    """A job's continuation raised ``CancelledError`` though nothing was cancelling it (a
    future it awaited was cancelled by someone else): the continuation failed, as for any
    exception of it; the message that acked the job is delivered again after a back-off
    and the continuation runs then.  Raised from the ``CancelledError``."""

    def __init__(self, tag: str) -> None:
        super().__init__(
            f"the continuation of job {tag!r} raised CancelledError (an awaited future was "
            "cancelled): it runs again when the message that acked the job comes back"
        )
        self.tag = tag


class SettingMissing(XorAckError):
    """A function made ``from_environment`` lacks a variable it needs (see the message)."""

    def __init__(self, name: str, what: str) -> None:
        super().__init__(
            f"{name} is not set: the function's environment must name {what} "
            "(infra/fleet.yaml sets it for the functions it makes); nothing was read or written"
        )
        self.name = name


class MarkerMissing(_TagError):
    """A fleet chain's page of evicted tokens is missing where the protocol wrote one.

    Only writers outside the fleet (another client stamping the chain, a deleted
    marker item) can cause it; whether the message was applied cannot be proven,
    so nothing is written: fail the chain and replay its root.
    """

    def __init__(self, tag: str, page: int) -> None:
        super().__init__(
            tag,
            f'"{tag}": page {page} of its evicted tokens is missing, so a re-delivered message'
            " cannot be proven new or applied; fail the chain and replay its root",
        )
        self.page = page


class ReplayRefused(_TagError):
    """``replay()`` was asked for a chain that is live or acked: there is nothing to replay."""

    def __init__(self, tag: str, state: str) -> None:
        super().__init__(
            tag, f'"{tag}" is {state}; only a failed, expired or missing chain can be replayed'
        )
        self.state = state


class UnsuitableClient(XorAckError):
    """The DynamoDB client given to a fleet does not meet its needs (see the message)."""


class TombstoneTooShort(UnsuitableClient):
    """A fleet with a continuation was given a client that forgets acked chains sooner
    than the fleet's messages can be delivered (``tombstone_ttl`` below ``marker_ttl``).

    The acked chain is the only record that a job still owes its continuation: once it
    expires, a kept dead letter or a re-delivery of the acking message finds no chain and
    is deleted, and the job never continues.  Raised by ``Fleet(...)``, before anything
    is read or written: connect the client with ``tombstone_ttl`` at least ``marker_ttl``
    (14 days by default, SQS's longest retention), as ``Fleet.connect`` does.
    """

    def __init__(self, tombstone_ttl: float, marker_ttl: float) -> None:
        super().__init__(
            f"the client keeps an acked chain {tombstone_ttl:g} s (tombstone_ttl), less than "
            f"the fleet's messages may still be delivered ({marker_ttl:g} s, marker_ttl): a "
            "job whose continuation failed would be forgotten and never continue. Connect "
            f"the client with tombstone_ttl={marker_ttl:g} or more, or use Fleet.connect, "
            "which does; nothing was read or written"
        )
        self.tombstone_ttl = tombstone_ttl
        self.marker_ttl = marker_ttl


class WindowMismatch(UnsuitableClient):
    """A message was sent by a fleet whose token window differs from this fleet's client.

    "Applied once" needs every writer of a chain to keep the same window (the pages of
    ``once.py`` are cut by it), so the message is refused before its handler runs and
    nothing is written: give ``Fleet.connect(token_window=...)`` and the workers'
    ``--token-window`` the same value (default 64).  The message stays in its queue.
    """

    def __init__(self, tag: str, sent_with: int, mine: int) -> None:
        super().__init__(
            f'"{tag}": a message sent by a fleet of token window {sent_with} reached a fleet '
            f"of token window {mine}; nothing was written. Give every client and worker of "
            "the fleet the same window (Fleet.connect(token_window=...), xor-ack worker "
            "--token-window)"
        )
        self.tag = tag
        self.sent_with = sent_with
        self.mine = mine
