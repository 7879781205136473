"""A replay's root payload, checked before anything is written.

``Fleet.replay`` creates the job's chain again, then builds the root message
(``Envelope.to_json``: ``json.dumps``) and sends it; a worker reads it back
(``Envelope.from_json``: ``json.loads``).  A payload that cannot make that trip failed
after the chain was live again, with no message to run it: a 502 "Root message not
sent".  So the message is built, and read back, here first: not JSON data (a set, an
int of more than 4,300 digits, a cycle) is refused, and so is a payload nested more
than :data:`MAX_DEPTH` levels deep.  Both JSON functions recurse once per level, from
wherever in the stack they are called: a payload ``json.loads`` read in the request
(a little under 1,000 levels) failed in ``json.dumps``, deeper down; a fixed bound well
under Python's recursion limit leaves the sender and the worker their own stacks.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from xor_ack_dynamodb.errors import XorAckError
from xor_ack_dynamodb.fleet.envelope import Envelope, root_envelope

from .security import Refused

#: How deep a root payload may nest (lists and objects), at most.
MAX_DEPTH = 500

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def nesting(text: str) -> int:
    """How deep JSON text nests (``[]`` is 1, ``3`` is 0), without recursing."""
    depth = deepest = 0
    for char in _STRING.sub("", text):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def check_root(tag: str, payload: Any, window: int, *, made: bool) -> None:
    """Refuse a payload the root message of ``tag`` cannot carry to a worker.

    ``made``: the payload came from ``replay_payload=`` (the dashboard's configuration,
    a 500 that names it), not from the form (a 400 that asks for another payload).
    """
    envelope = root_envelope(tag, bytes(8), payload, window)  # the chain id comes later
    try:
        body = envelope.to_json()
        depth = nesting(body) - 1  # the envelope is an object around the payload
        if depth <= MAX_DEPTH:
            Envelope.from_json(body)
    except RecursionError:
        _refuse(made, f"is nested too deep to build its message (at most {MAX_DEPTH} levels)")
    except (TypeError, ValueError, XorAckError) as exc:
        _refuse(made, f"cannot be carried by its root message ({type(exc).__name__}: {exc})")
    else:
        if depth > MAX_DEPTH:
            _refuse(made, f"is nested too deep: {depth} levels, of at most {MAX_DEPTH}")


def _refuse(made: bool, why: str) -> NoReturn:
    if made:
        raise Refused(
            500,
            "Replay payload not sendable",
            f"replay_payload made a root payload that {why}: make replay_payload return "
            f"JSON data at most {MAX_DEPTH} levels deep; nothing was written",
        )
    raise Refused(
        400,
        "Payload not sendable",
        f"the root payload {why}: give a flatter payload; nothing was written",
    )
