"""Errors of the fleet (envelopes, pages of evicted tokens, replay); all are ``XorAckError``."""

from __future__ import annotations

from ..errors import XorAckError, _TagError


class InvalidEnvelope(XorAckError):
    """A message body is not a fleet envelope (JSON with tag, chain, id, sent, payload).

    Raised before any write; the message changes nothing.  A worker leaves such a
    message to the queue's redrive policy, which moves it to the dead-letter queue.
    """


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
