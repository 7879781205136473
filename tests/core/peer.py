"""A scripted DynamoDB peer: runs one ``_core`` generator, answering each Call from a script.

No server: each step of a script names the operation the core must send next and
what comes back -- a response dict, an exception (thrown into the generator, as
the clients do), or a function of the Call that builds either (a write's random
token is only known once it is sent).  Errors are built by hand with the
``ResponseMetadata`` that ``_attempts`` reads.

Every Call is checked against botocore's model of the DynamoDB API (the check the
clients turn off at run time, ``aws.botocore_config``): a request the core builds
wrong fails here, not on a server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import botocore.session
from botocore import xform_name
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.validate import validate_parameters

from xor_ack_dynamodb.dynamodb._attempts import _NEVER_SENT, UNKNOWN_ATTEMPTS
from xor_ack_dynamodb.dynamodb._core.effects import Call, Op, Sleep

Answer: TypeAlias = dict[str, Any] | BaseException | Callable[[Call], Any]
Step: TypeAlias = tuple[str, Answer]

TAG = "t"
CHAIN = b"chain-01"
OTHER_CHAIN = b"chain-02"


_MODEL = botocore.session.get_session().get_service_model("dynamodb")
_OPERATIONS = {xform_name(name): name for name in _MODEL.operation_names}


def check_request(call: Call) -> None:
    """Raise botocore's ``ParamValidationError`` if ``call`` breaks the DynamoDB model."""
    shape = _MODEL.operation_model(_OPERATIONS[call.op]).input_shape
    validate_parameters(call.params, shape)


@dataclass
class Ran:
    """What a scripted run saw: the Calls sent, the sleeps, and the result."""

    result: Any = None
    calls: list[Call] = field(default_factory=list)
    sleeps: list[float] = field(default_factory=list)

    @property
    def ops(self) -> list[str]:
        return [call.op for call in self.calls]


def drive(op: Op, script: Sequence[Step], ran: Ran | None = None) -> Ran:
    """Run ``op`` to its end against ``script``; every step must be used, in order.

    An exception the operation raises propagates (after the Calls are recorded in
    ``ran``, if given, for the test to look at).
    """
    ran = ran if ran is not None else Ran()
    steps = list(script)
    try:
        effect = next(op)
        while True:
            if isinstance(effect, Sleep):
                ran.sleeps.append(effect.seconds)
                effect = op.send(None)
                continue
            ran.calls.append(effect)
            check_request(effect)
            assert steps, f"unscripted {effect.op}: {effect.params}"
            expected, answer = steps.pop(0)
            assert effect.op == expected, f"sent {effect.op}, the script expects {expected}"
            reply = answer(effect) if callable(answer) else answer
            effect = op.throw(reply) if isinstance(reply, BaseException) else op.send(reply)
    except StopIteration as stop:
        ran.result = stop.value
    assert not steps, f"script steps never asked for: {[name for name, _ in steps]}"
    return ran


def item(
    stamp: bytes,
    *,
    version: int = 1,
    tokens: Sequence[bytes] = (),
    chain_id: bytes = CHAIN,
    tag: str = TAG,
    acked: bool = False,
    reason: str | None = None,
    deadline: float | None = None,
    idle_timeout: float | None = None,
    expires_at: float | None = None,
) -> dict[str, Any]:
    """A chain's item, as DynamoDB returns it."""
    raw: dict[str, Any] = {
        "tagID": {"S": tag},
        "stamp": {"B": stamp},
        "chain_id": {"B": chain_id},
        "version": {"N": str(version)},
        "tokens": {"B": b"".join(tokens)},
        "created_at": {"N": "1"},
        "updated_at": {"N": "1"},
    }
    if acked:
        raw["acked_at"] = {"N": "2"}
    if reason is not None:
        raw["failed_at"] = {"N": "2"}
        raw["reason"] = {"S": reason}
    for name, value in (
        ("deadline", deadline),
        ("idle_timeout", idle_timeout),
        ("expires_at", expires_at),
    ):
        if value is not None:
            raw[name] = {"N": str(value)}
    return raw


def written(call: Call) -> dict[str, Any]:
    """The item after ``call`` (a stamp's or a create's UpdateItem) landed."""
    values = call.params["ExpressionAttributeValues"]
    blob = values[":t"]["B"]
    return item(
        values[":s"]["B"],
        version=int(values[":v"]["N"]),
        tokens=[blob[i : i + 8] for i in range(0, len(blob), 8)],
        chain_id=values[":c"]["B"],
        tag=call.params["Key"]["tagID"]["S"],
    )


def got(raw: dict[str, Any] | None) -> dict[str, Any]:
    """A GetItem response."""
    return {} if raw is None else {"Item": raw}


def client_error(
    code: str,
    *,
    op: str = "UpdateItem",
    status: int = 400,
    retries: int = 0,
    unknown_before: int = 0,
    item: dict[str, Any] | None = None,
    reasons: list[dict[str, Any]] | None = None,
) -> ClientError:
    """A ClientError as botocore raises it, after ``retries`` re-sends.

    ``unknown_before``: how many of the earlier sends had an unknown outcome
    (``_attempts``' count); 0 means every earlier send was refused (a throttle).
    """
    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": "scripted"},
        "ResponseMetadata": {
            "HTTPStatusCode": status,
            "RetryAttempts": retries,
            UNKNOWN_ATTEMPTS: unknown_before,
        },
    }
    if item is not None:
        response["Item"] = item
    if reasons is not None:
        response["CancellationReasons"] = reasons
    return ClientError(response, op)  # type: ignore[arg-type]


def condition_failed(
    raw: dict[str, Any] | None = None, *, resent: bool = False, throttled: int = 0
) -> ClientError:
    """A failed condition; ``resent``: an earlier send of it had an unknown outcome."""
    return client_error(
        "ConditionalCheckFailedException",
        retries=int(resent) + throttled,
        unknown_before=int(resent),
        item=raw,
    )


def lost_connection(*, never_sent: bool = False) -> EndpointConnectionError:
    """A transport error botocore gave up on; ``never_sent``: no attempt ever connected."""
    exc = EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    if never_sent:
        setattr(exc, _NEVER_SENT, True)
    return exc


def ok(_: Call | None = None) -> dict[str, Any]:
    """An UpdateItem that went through."""
    return {"ResponseMetadata": {"HTTPStatusCode": 200, "RetryAttempts": 0}}
