"""A chain request DynamoDB refused for its key: the client's ``partition_key`` is not the
table's key alone (another name, another type, a sort key too).

DynamoDB says so in a ``ValidationException`` whose words name no option; the clients
turn it into ``TableMismatch`` (``ClientBase._told``) and the command line's hint reads
the same predicate (``cli.errors``).
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from ..errors import TableMismatch
from .aws import cancellation_code, cancellation_reasons, error_code, error_message
from .table import KEY_TYPE

#: How DynamoDB refuses a request whose key is not the table's (a ``ValidationException``):
#: the table's key attribute missing from it (the request names another), of another type,
#: or the table's key has a sort key too (AWS's words and DynamoDB Local's, lower case).
_KEY_REFUSED = (
    "one of the required keys was not given a value",
    "the provided key element does not match the schema",
    "type mismatch for key",
    "the number of conditions on the keys is invalid",
)


def _key_refused(exc: BaseException) -> str | None:
    """DynamoDB's words if it refused the request because its key is not the table's: a
    ``ValidationException``, or a transaction every refused item of which was so refused
    (``ValidationError``); None for anything else."""
    if not isinstance(exc, ClientError):
        return None
    code = error_code(exc)
    if code == "ValidationException":
        messages = [error_message(exc)]
    elif code == "TransactionCanceledException":
        reasons = [r for r in cancellation_reasons(exc) if cancellation_code(r) != "None"]
        if not all(cancellation_code(r) == "ValidationError" for r in reasons):
            return None
        messages = [str(r.get("Message", "")) for r in reasons]
    else:
        return None
    refused = [m for m in messages if any(words in m.lower() for words in _KEY_REFUSED)]
    return refused[0] if refused and len(refused) == len(messages) else None


def refuses_key(exc: BaseException) -> bool:
    """Did DynamoDB refuse the request because its key is not the table's?"""
    return _key_refused(exc) is not None


def key_refusal(exc: BaseException, table: str, partition_key: str) -> TableMismatch | None:
    """What a chain request refused with ``exc`` means if DynamoDB found its key is not the
    table's: the client's ``partition_key`` is another than the table's (``TableMismatch``,
    ``exc`` its cause); None: something else."""
    words = _key_refused(exc)
    if words is None:
        return None
    said = (
        f"table {table}'s key is not {partition_key} (type {KEY_TYPE}) alone, as a chains"
        f' table\'s is (DynamoDB: "{words}"): name a chains table'
    )
    refusal = TableMismatch(
        f"{said} (table=...), or pass its own key as partition_key=...; nothing was written"
    ).with_cli(
        f"{said} (--table), or pass its own key as --partition-key (`xor-ack table"
        " describe` names it) or XOR_ACK_PARTITION_KEY; nothing was written"
    )
    refusal.__cause__ = exc
    return refusal
