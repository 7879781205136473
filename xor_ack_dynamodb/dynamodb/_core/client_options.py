"""A client's options, checked when it is made (``InvalidArgument`` naming the option):
nothing is sent with an option no chain could work with."""

from __future__ import annotations

import re
from collections.abc import Callable

from ...errors import InvalidArgument
from ...errors._refusals import shown
from .. import item as I
from ..retry import RetryPolicy
from .validate import MAX_ITEM_BYTES, MAX_TOKEN_WINDOW, MAX_TTL, _check_seconds


def check_count(name: str, value: object, least: int) -> int:
    """An option that counts something (``concurrency``, ``cache_size``, ...): an int
    (not a bool) >= ``least``; ``InvalidArgument`` naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidArgument(f"{name} must be an int >= {least}, not {shown(value)}")
    return value


def check_token_window(value: object) -> int:
    """A client's ``token_window``: 2 to ``MAX_TOKEN_WINDOW``; more, and no chain fits one item."""
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= MAX_TOKEN_WINDOW:
        raise InvalidArgument(
            f"token_window must be an int from 2 to {MAX_TOKEN_WINDOW} (a chain's item holds"
            f" that many 8-byte tokens within DynamoDB's {MAX_ITEM_BYTES} bytes), not {value!r}"
        )
    return value


def check_retry(retry: object) -> RetryPolicy | None:
    """A client's ``retry``: a ``RetryPolicy`` or None; ``InvalidArgument`` otherwise."""
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise InvalidArgument(f"retry must be a RetryPolicy or None, not {retry!r}")
    return retry


def check_name(name: str, value: object) -> str:
    """A client's ``table`` or ``partition_key``: a non-empty ``str``; ``InvalidArgument``."""
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"{name} must be a non-empty str (a DynamoDB name), not {value!r}")
    return value


def check_partition_key(value: object) -> str:
    """A client's ``partition_key``: a name (``check_name``) that no attribute of the chain's
    item has (DynamoDB would refuse each write setting its key); ``InvalidArgument``."""
    key = check_name("partition_key", value)
    if key in I.ATTRIBUTES:
        raise InvalidArgument(
            f"partition_key cannot be {key!r}: the chain item uses that attribute; name the "
            f"chains table's partition key (the default is {I.DEFAULT_PARTITION_KEY!r})"
        )
    return key


#: An AWS region's name as botocore takes one (``botocore.utils.validate_region_name``).
_REGION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?")


def check_region_name(value: object) -> str | None:
    """``connect``'s ``region_name``: None (the environment's) or a region's name such as
    ``us-east-1``; botocore's ``InvalidRegionError`` or a ``TypeError`` otherwise, later."""
    if value is not None and not (isinstance(value, str) and _REGION.fullmatch(value)):
        raise InvalidArgument(
            f"region_name must be an AWS region's name such as 'us-east-1', or None (the "
            f"environment's), not {shown(value)}"
        )
    return value


def check_clock(value: object) -> Callable[[], float]:
    """A client's ``clock``: a function of no argument giving epoch seconds; ``InvalidArgument``."""
    if not callable(value):
        raise InvalidArgument(
            f"clock must be a function giving the time in epoch seconds (time.time), not {value!r}"
        )
    return value


def check_tombstone_ttl(value: object) -> float:
    """``tombstone_ttl``: a finite number of seconds above 0 and at most ``MAX_TTL``: every
    acked or failed chain's ``expires_at`` is now + it (``InvalidArgument`` otherwise)."""
    checked = _check_seconds("tombstone_ttl", value, MAX_TTL, InvalidArgument, "")
    if checked is None:  # every closed chain gets one: None is no answer here
        raise InvalidArgument(
            f"tombstone_ttl must be a number of seconds above 0 and at most {MAX_TTL:.0f}, not None"
        )
    return checked
