"""The message envelope: which chain a message belongs to, who it is, what it carries.

A message's identity is 16 bytes.  A root's is derived from its chain's tag, a
child's from its parent's identity and its payload (BLAKE2b; children with equal
payloads are told apart by how many such siblings came before them), and a
message's stamp from its identity.  So a parent that runs again (a re-delivery, a
Lambda retry, a worker killed half-way) announces the same children with the same
identities and the same stamps, in whatever order it returns them this time:
re-sent children are duplicates, recognised as such, not new work.

A child's identity is not its place among its siblings: a parent whose children come
in another order when it runs again (a set, results gathered as they finish) would
then give one child's identity to another's payload, so one child runs twice and the
other never, while the job acks.  A parent whose children differ when
it runs again (a timestamp in a payload) gives them other identities: the children of
its earlier run are not the ones its write expects, the job's chain never reaches
zero, and the job fails when its deadline passes (or is seen stalled), not acked.

On the wire an envelope is a JSON object::

    {"xor_ack": 1, "tag": "job-7", "chain": "<chain_id hex>", "id": "<32 hex>",
     "parent": "<32 hex>" | null, "index": 0 | null, "sent": 12, "window": 64,
     "payload": ...}

``window`` is the token window of the fleet that sent the message (absent in messages
of earlier versions): a fleet whose client keeps another window refuses the message
(``WindowMismatch``) before its handler runs, since "applied once" needs every writer
of a chain to keep the same window.

``chain`` binds the message to one generation of the chain (a replay makes a new
one), and ``sent`` is a lower bound of the chain's version when the first copy of
the message was sent: every write of the message lands after it (``once.py``
uses it).  A child inherits its parent's ``sent``, not the version its parent
read: a parent may be a re-run whose earlier run sent the same children, and
those may have landed long before (a test injecting such re-runs caught it).
So fleet messages carry ``sent=1`` unless a sender knows better, and a far
duplicate check reads the chain's pages, each once per process (they never change).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidTag
from ..stamps import Stamp
from .errors import InvalidEnvelope

#: Bytes of a message identity and of a fleet stamp (128 bits, the library's default).
ID_BYTES = 16
VERSION = 1


def _digest(data: bytes, person: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=ID_BYTES, person=person).digest()


def root_id(tag: str) -> bytes:
    """The identity of the root message of the chain ``tag``."""
    return _digest(tag.encode("utf-8", "surrogatepass"), b"xa-fleet-root")


def canonical_payload(payload: Any) -> bytes:
    """``payload`` as JSON text that equal JSON data always gives: as the message carries it
    (``to_json``), read back, then written with its objects' keys sorted."""
    carried = json.loads(json.dumps(payload, separators=(",", ":")))
    return json.dumps(carried, sort_keys=True, separators=(",", ":")).encode("ascii")


def child_id(parent: bytes, *, payload: Any, occurrence: int = 0) -> bytes:
    """The identity of the child of the message ``parent`` that carries ``payload``.

    ``occurrence``: how many of its siblings before it carry an equal payload (0-based),
    so that a parent may send the same payload more than once.
    """
    if isinstance(occurrence, bool) or not isinstance(occurrence, int) or occurrence < 0:
        raise InvalidEnvelope(f"a child's occurrence is an int >= 0, not {occurrence!r}")
    return _content_id(parent, canonical_payload(payload), occurrence)


def _content_id(parent: bytes, canonical: bytes, occurrence: int) -> bytes:
    content = occurrence.to_bytes(8, "big") + canonical
    return _digest(bytes(parent) + content, b"xa-fleet-content")


def stamp_of(message_id: bytes) -> Stamp:
    """The stamp of a message: derived from its identity, 128 bits, never all zeros."""
    value = _digest(bytes(message_id), b"xa-fleet-stamp")
    if not any(value):  # a chance of 2**-128; the rule still holds
        value = value[:-1] + b"\x01"
    return Stamp(value)


@dataclass(frozen=True)
class Envelope:
    """One message of a fleet: its chain, identity, parent, payload."""

    tag: str
    chain_id: bytes
    id: bytes
    payload: Any = None
    parent: bytes | None = None
    index: int | None = None
    sent: int = 1
    window: int | None = None  # the sending fleet's token window (None: not said)

    @property
    def stamp(self) -> Stamp:
        return stamp_of(self.id)

    @property
    def message_id(self) -> str:
        """The identity as hex: what logs, tokens and deduplication ids use."""
        return self.id.hex()

    def children(
        self, payloads: Sequence[Any], sent: int, window: int | None = None
    ) -> list[Envelope]:
        """The envelopes of this message's children, one per payload (``index``: its place),
        sent when the chain was at version ``sent`` or later by a fleet of token window
        ``window`` (default: this message's)."""
        seen: Counter[bytes] = Counter()
        envelopes = []
        for index, payload in enumerate(payloads):
            key = canonical_payload(payload)
            identity = _content_id(self.id, key, seen[key])
            seen[key] += 1
            envelopes.append(
                Envelope(
                    tag=self.tag,
                    chain_id=self.chain_id,
                    id=identity,
                    payload=payload,
                    parent=self.id,
                    index=index,
                    sent=sent,
                    window=self.window if window is None else window,
                )
            )
        return envelopes

    def to_json(self) -> str:
        return json.dumps(
            {
                "xor_ack": VERSION,
                "tag": self.tag,
                "chain": self.chain_id.hex(),
                "id": self.id.hex(),
                "parent": None if self.parent is None else self.parent.hex(),
                "index": self.index,
                "sent": self.sent,
                **({} if self.window is None else {"window": self.window}),
                "payload": self.payload,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, body: str | bytes) -> Envelope:
        """Decode a message body; ``InvalidEnvelope`` saying what is wrong if it is not one.

        Every path decodes with this (the worker's work queue and dead-letter drain, the
        Lambda handlers), so a body is judged the same everywhere: the tag by the rules
        of every tag (``InvalidTag``'s: 1 to 2,048 bytes of UTF-8), before anything runs.
        """
        try:
            data = json.loads(body)
        # Not JSON; not text at all (None, a number); nested deeper than the parser goes.
        except (ValueError, TypeError, RecursionError) as exc:
            raise InvalidEnvelope(
                f"a fleet message is JSON text; this body is not ({exc})"
            ) from exc
        if not isinstance(data, dict) or data.get("xor_ack") != VERSION:
            raise InvalidEnvelope(
                f'a fleet message is a JSON object with "xor_ack": {VERSION};'
                f" got {str(body)[:80]!r}"
            )
        field = "tag"
        try:
            tag = data["tag"]
            field = "chain"
            chain_id = bytes.fromhex(data["chain"])
            field = "id"
            message_id = bytes.fromhex(data["id"])
            field = "parent"
            parent = None if data.get("parent") is None else bytes.fromhex(data["parent"])
            index = data.get("index")
            field = "sent"
            sent = data["sent"]
            window = data.get("window")
        except KeyError as exc:
            raise InvalidEnvelope(
                f"a fleet message has a {field!r} field; this one has none"
            ) from exc
        except (TypeError, ValueError) as exc:
            raise InvalidEnvelope(
                f"a fleet message's {field!r} is hexadecimal text; this one's is "
                f"{str(data.get(field))[:40]!r} ({exc})"
            ) from exc
        try:
            InvalidTag.check(tag)
        except InvalidTag as exc:
            raise InvalidEnvelope(f"an envelope's tag is a chain's tag: {exc}") from exc
        if len(message_id) != ID_BYTES or not chain_id:
            raise InvalidEnvelope(f"an envelope's id is {ID_BYTES} bytes and its chain not empty")
        if isinstance(sent, bool) or not isinstance(sent, int) or sent < 1:
            raise InvalidEnvelope(f"an envelope's sent is a version >= 1, not {sent!r}")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise InvalidEnvelope(f"an envelope's index is an int or null, not {index!r}")
        if window is not None and (
            isinstance(window, bool) or not isinstance(window, int) or window < 1
        ):
            raise InvalidEnvelope(f"an envelope's window is an int >= 1 or absent, not {window!r}")
        return cls(
            tag=tag,
            chain_id=chain_id,
            id=message_id,
            payload=data.get("payload"),
            parent=parent,
            index=index,
            sent=sent,
            window=window,
        )


def root_envelope(tag: str, chain_id: bytes, payload: Any, window: int | None = None) -> Envelope:
    """The root message of the chain ``tag`` (generation ``chain_id``)."""
    return Envelope(
        tag=tag, chain_id=chain_id, id=root_id(tag), payload=payload, sent=1, window=window
    )


def named(body: Any, queue_message_id: Any) -> dict[str, Any]:
    """What a log line about a message's failure names: its job's ``tag`` and the fleet's
    ``message_id`` (as the ``submitted`` and ``applied`` lines do), and the queue's own id
    (``sqs_message_id``); a body that is no envelope, by the queue's id alone."""
    tag: str | None = None
    message_id: str | None = None
    with contextlib.suppress(InvalidEnvelope):  # no envelope: the queue's id alone
        envelope = Envelope.from_json(body)
        tag, message_id = envelope.tag, envelope.message_id
    return {"tag": tag, "message_id": message_id, "sqs_message_id": queue_message_id}
