"""DynamoDB Streams records, in either format, made plain: one :class:`StreamRecord`.

Two formats carry the same record:

- the **Lambda event** format (a stream-triggered function's ``event["Records"]``):
  JSON, so a ``B`` value is a base64 string, ``ApproximateCreationDateTime`` a number
  of epoch seconds, and ``userIdentity`` has the keys ``type`` / ``principalId``;
- the **GetRecords** format (``boto3.client("dynamodbstreams").get_records``): ``B``
  values are ``bytes``, ``ApproximateCreationDateTime`` a ``datetime``, and
  ``userIdentity`` has the keys ``Type`` / ``PrincipalId``.

:func:`parse` accepts both, value by value, so a record re-serialised by a
framework (aws-lambda-powertools, a test fixture) still decodes.  Anything that is
not a stream record of this shape raises :class:`~xor_ack_dynamodb.errors.CorruptRecord`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..dynamodb.item import FLEET_MARKER as FLEET_MARKER
from ..errors import CorruptRecord, InvalidArgument

#: The principal of the records of TTL deletions on AWS (``userIdentity.principalId``).
TTL_PRINCIPAL = "dynamodb.amazonaws.com"
#: The ``eventName`` DynamoDB Local 3.3.0 gives a TTL deletion (it is written by the AWS
#: SDK for Java, which names an enum value it does not know so), with no ``userIdentity``.
LOCAL_TTL_EVENT_NAME = "UNKNOWN_TO_SDK_VERSION"
EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")
#: ``eventSource`` of a DynamoDB Streams record (both formats).
SOURCE = "aws:dynamodb"
#: The coarsest rounding of a record's ``ApproximateCreationDateTime`` (seconds): it is
#: rounded down, to the second on AWS and to the minute on DynamoDB Local, so a record was
#: made in ``[approximate_time, approximate_time + RECORD_TIME_STEP)``.
RECORD_TIME_STEP = 60


@dataclass(frozen=True)
class StreamRecord:
    """One stream record, format-free: low-level images with ``bytes`` for ``B``."""

    event_name: str  #: INSERT, MODIFY or REMOVE (a DynamoDB Local TTL deletion: REMOVE)
    sequence_number: str
    event_id: str
    keys: dict[str, Any]
    old_image: dict[str, Any] | None
    new_image: dict[str, Any] | None
    #: ``ApproximateCreationDateTime`` in epoch seconds (None if the record has none).
    approximate_time: float | None
    #: A TTL deletion: ``userIdentity`` is the DynamoDB service principal (AWS), or the
    #: record is DynamoDB Local's ``UNKNOWN_TO_SDK_VERSION`` removal.
    by_ttl: bool

    @property
    def name(self) -> str:
        """How errors name this record: its sequence number and event id."""
        return f"record {self.sequence_number or '?'} (eventID {self.event_id or '?'})"


def check_partition_key(partition_key: object) -> str:
    """The table's partition key as ``decode`` and ``StreamHandler`` take it: a non-empty str."""
    if not isinstance(partition_key, str) or not partition_key:
        raise InvalidArgument(
            "partition_key must be a non-empty str (the table's partition key attribute,"
            f" e.g. 'tagID'), not {partition_key!r}"
        )
    return partition_key


def _describe(record: Mapping[str, Any]) -> str:
    body = record.get("dynamodb")
    seq = body.get("SequenceNumber") if isinstance(body, Mapping) else None
    return f"record {seq or '?'} (eventID {record.get('eventID') or '?'})"


def attribute_value(value: Any, where: str) -> Any:
    """One AttributeValue with ``B`` / ``BS`` as bytes (decoded from base64 when a string)."""
    if not isinstance(value, Mapping) or len(value) != 1:
        raise ValueError(f"{where} is not an AttributeValue")
    ((kind, data),) = value.items()
    if kind == "B":
        return {"B": _blob(data, where)}
    if kind == "BS":
        return {"BS": [_blob(v, where) for v in data]}
    if kind == "M":
        return {"M": image(data, where)}
    if kind == "L":
        return {"L": [attribute_value(v, f"{where}[{i}]") for i, v in enumerate(data)]}
    return {kind: data}


def _blob(data: Any, where: str) -> bytes:
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    if isinstance(data, str):
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"{where} is not base64") from exc
    raise ValueError(f"{where} holds a {type(data).__name__}, not binary data")


def image(data: Any, where: str) -> dict[str, Any]:
    """A low-level item (``{"name": {"S": ...}, ...}``) with binary values as bytes."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where} is not a map")
    return {str(name): attribute_value(value, f"{where}.{name}") for name, value in data.items()}


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ValueError(f"ApproximateCreationDateTime {value!r} is not a time")


def _by_ttl(record: Mapping[str, Any], event_name: str) -> bool:
    if event_name == LOCAL_TTL_EVENT_NAME:
        return True
    identity = record.get("userIdentity")
    if not isinstance(identity, Mapping):
        return False
    kind = identity.get("type", identity.get("Type"))
    principal = identity.get("principalId", identity.get("PrincipalId"))
    return bool(kind == "Service" and principal == TTL_PRINCIPAL)


def parse(record: object) -> StreamRecord:
    """A stream record of either format as a :class:`StreamRecord`; ``CorruptRecord`` if not one."""
    if not isinstance(record, Mapping):
        raise CorruptRecord(
            "record ?",
            f"is a {type(record).__name__}, not a mapping (a record of a stream event's Records"
            " list, or of GetRecords)",
        )
    name = _describe(record)
    try:
        body = record["dynamodb"]
        if not isinstance(body, Mapping):
            raise ValueError("dynamodb is not a map")
        source = record.get("eventSource", SOURCE)
        if source != SOURCE:
            raise ValueError(f"eventSource {source!r} is not {SOURCE!r}")
        event_name = str(record["eventName"])
        if event_name not in (*EVENT_NAMES, LOCAL_TTL_EVENT_NAME):
            raise ValueError(f"eventName {event_name!r} is not INSERT, MODIFY or REMOVE")
        old = body.get("OldImage")
        new = body.get("NewImage")
        return StreamRecord(
            event_name="REMOVE" if event_name == LOCAL_TTL_EVENT_NAME else event_name,
            sequence_number=str(body.get("SequenceNumber", "")),
            event_id=str(record.get("eventID", "")),
            keys=image(body.get("Keys", {}), "Keys"),
            old_image=None if old is None else image(old, "OldImage"),
            new_image=None if new is None else image(new, "NewImage"),
            approximate_time=_epoch(body.get("ApproximateCreationDateTime")),
            by_ttl=_by_ttl(record, event_name),
        )
    except (KeyError, TypeError, ValueError) as exc:
        what = f"has no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise CorruptRecord(name, what) from exc
