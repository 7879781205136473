"""A job's payload, checked before its chain is created (``Fleet.submit``, ``replay``).

The root message is built after the create (it names the chain's generation) with
``Envelope.to_json`` (``json.dumps``), and a worker reads it back with
``Envelope.from_json`` (``json.loads``).  A payload that cannot make that trip (not
JSON data: a set, bytes, an int of more than 4,300 digits, a cycle) once failed after
the chain was live, with no message to run it.  So the message is built, and read
back, first.  Both JSON functions recurse once per level from wherever in the stack
they are called, so a payload deeper than :data:`MAX_DEPTH` is refused too: a fixed
bound well under Python's recursion limit leaves the sender and the worker their own
stacks.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import XorAckError
from .envelope import Envelope, root_envelope
from .errors import InvalidPayload

#: How deep a job's payload may nest (lists and objects), at most.
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


def check_payload(tag: str, payload: Any, window: int | None) -> None:
    """``InvalidPayload`` unless the root message of ``tag`` can carry ``payload``."""
    envelope = root_envelope(tag, bytes(8), payload, window)  # the chain id comes later
    try:
        body = envelope.to_json()
        depth = nesting(body) - 1  # the envelope is an object around the payload
        if depth <= MAX_DEPTH:
            Envelope.from_json(body)
    except RecursionError as exc:
        raise InvalidPayload(f"is nested too deep (at most {MAX_DEPTH} levels)", MAX_DEPTH) from exc
    except (TypeError, ValueError, XorAckError) as exc:
        raise InvalidPayload(f"is not JSON data ({type(exc).__name__}: {exc})", MAX_DEPTH) from exc
    if depth > MAX_DEPTH:
        raise InvalidPayload(
            f"is nested too deep: {depth} levels, of at most {MAX_DEPTH}", MAX_DEPTH
        )
