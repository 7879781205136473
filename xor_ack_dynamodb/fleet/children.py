"""What a handler returns: its children's payloads, read before any child is sent.

``None`` is no children; any other iterable (a list, a tuple, a generator, a set) is
read once, each item a child's payload.  A str, bytes or a mapping is iterable too,
but no handler means a child per character, byte or key: returning ``"ok"`` once made
two child jobs, ``"o"`` and ``"k"``.  Those, and a value that is no iterable at all,
are refused (``InvalidChildren``); so is a child whose payload cannot travel as JSON
(``payloads.check_payload``), which once raised a bare ``TypeError`` from the sender
on every receive until the queue gave up on it.

The order of the children does not matter: a child is named by its payload
(``envelope.child_id``), so a set, whose order differs between processes, or a
generator yielding results as they finish, names the same children when its job runs
again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import InvalidChildren, InvalidPayload
from .payloads import check_payload

#: Iterable, but never a list of children.
_NOT_CHILDREN = (str, bytes, bytearray, memoryview, Mapping)


def children_of(result: object, tag: str, message_id: str) -> list[Any]:
    """The children's payloads a handler returned; ``InvalidChildren`` if it returned none."""
    if result is None:
        return []
    if isinstance(result, _NOT_CHILDREN):
        raise InvalidChildren(tag, message_id, type(result).__name__)
    try:
        found = iter(result)  # type: ignore[call-overload]
    except TypeError as exc:
        raise InvalidChildren(tag, message_id, type(result).__name__) from exc
    payloads = list(found)
    for index, payload in enumerate(payloads):
        try:
            check_payload(tag, payload, None)
        except InvalidPayload as exc:
            kind = type(payload).__name__
            raise InvalidChildren(tag, message_id, kind, child=index, why=exc.why) from exc
    return payloads
