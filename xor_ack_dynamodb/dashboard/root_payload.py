"""A replay's root payload, checked before anything is written: the fleet's own check
(``fleet.payloads``: not JSON data, or too deep for the root message), said as the
dashboard's refusal.  A payload the form gave is the request's fault (400); one that
``replay_payload=`` made is the dashboard's configuration's (500).
"""

from __future__ import annotations

from typing import Any, NoReturn

from xor_ack_dynamodb.fleet.errors import InvalidPayload
from xor_ack_dynamodb.fleet.payloads import MAX_DEPTH, check_payload

from .security import Refused


def check_root(tag: str, payload: Any, window: int, *, made: bool) -> None:
    """Refuse a payload the root message of ``tag`` cannot carry to a worker.

    ``made``: the payload came from ``replay_payload=`` (the dashboard's configuration,
    a 500 that names it), not from the form (a 400 that asks for another payload).
    """
    try:
        check_payload(tag, payload, window)
    except InvalidPayload as exc:
        _refuse(made, exc.why)


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
