"""The sans-I/O core of the DynamoDB clients: the names they import, re-exported.

Every operation (create, stamp, fail, delete, get, wait) is a generator that
yields *effects* -- a :class:`Call` to send to DynamoDB or a :class:`Sleep` --
and receives what came back: the response dict for a call (or the exception,
thrown into the generator), ``None`` after a sleep.  Its return value is the
operation's result.  The async client (``dynamodb.py``) and the sync client
(``sync.py``) only run these generators: which request, which condition, what
a response or an error means and when to retry is decided in ``_core``, once:

- ``_core/effects.py``   Call, Sleep, Entry, outcomes, ClientStats
- ``_core/validate.py``  input checks, DynamoDB's limits, cutting ``*_many`` into requests
- ``_core/expressions.py``  a write as a structured value, rendered to expressions once
- ``_core/requests.py``  the configuration and every request's parameters (Requests)
- ``_core/landing.py``   landed / not landed / unknown, and the next step: the tables
- ``_core/reads.py``     the cache, reads, settling a failed write (Reads)
- ``_core/deadlines.py`` the timeout write (once), touch, sweep, list_chains (Deadlines)
- ``_core/chains.py``    create, stamp, fail, delete, wait on one chain (SingleChain)
- ``_core/many.py``      transactions over many chains; ``Chains``, the whole core

How a stamp never lands twice
-----------------------------
botocore re-sends a request whose response was lost (connection reset, 5xx).
If the first send had landed, the re-send's condition fails, and a naive client
would re-read the item and XOR the stamp in a second time.  Here every write
carries a random write token (and the caller's idempotency tokens, if any)
that is kept in the item's ``tokens`` (the last ``token_window`` tokens),
and a failed condition returns the current item
(``ReturnValuesOnConditionCheckFailure=ALL_OLD``, with a consistent read as the
fallback where a server ignores it).  If the item holds the write's token, the
write landed: the stamp is reported applied, not re-applied.  If the token is
absent and the list still reaches back to the state the write was planned on
(the list never overflowed, or its oldest tokens are still the newest two of that
state, so every write since is in it), it did not land, which is proven, and the
stamp is retried.

What counts as ambiguous: only a request one of whose sends has an *unknown*
outcome (``_attempts`` watches botocore's ``needs-retry`` event, which sees
every send): a lost or reset connection, a read timeout, a 5xx, a 2xx that
botocore retried anyway.  A send refused with a 4xx (throttling, validation,
a failed condition) or whose connection could not be opened did not land, so a
write throttled three times and then refused by its condition is a plain lost
race, not a possible double.  When a send of unknown outcome exists, the token
is absent, and more writes landed since the planned state than the token
window holds, the client refuses to guess (``AmbiguousWrite``).  A transport
error that botocore gave up on is settled by a consistent read (unless no send
ever connected: then it is raised as proven not landed).
"""

from __future__ import annotations

from ._aws import error_code as _error_code
from ._core.cancellation import RETRYABLE_CANCELLATIONS
from ._core.chains import _copy_error, plan_batch
from ._core.effects import (
    ENTRY_ERRORS,
    Call,
    CancelReport,
    ClientStats,
    Effect,
    Entry,
    Op,
    Outcome,
    Sleep,
)
from ._core.landing import (
    CONDITION_FAILED,
    TRANSACTION_CANCELED,
    TRANSACTION_CONFLICT,
)
from ._core.landing import reaches_back as _reaches_back
from ._core.many import Chains, _moved
from ._core.requests import _ATTRIBUTES, _names
from ._core.validate import (
    DEFAULT_TOKEN_WINDOW,
    DEFAULT_TOMBSTONE_TTL,
    ITEM_OVERHEAD_BYTES,
    MAX_BATCH_GET,
    MAX_ITEM_BYTES,
    MAX_TAG_BYTES,
    MAX_TOKEN_BYTES,
    MAX_TRANSACTION_BYTES,
    MAX_TRANSACTION_ITEMS,
    MAX_TTL,
    MAX_UNPROCESSED_ROUNDS,
    WRITE_TOKEN_BYTES,
    _check_mapping,
    check_fits,
    check_reason,
    check_tag,
    check_tags,
    check_token,
    check_ttl,
    check_wait,
    chunked,
    collect_many,
    create_entries,
    many_entries,
    one_entry,
    transaction_bytes,
    unwrap,
)

__all__ = [
    "CONDITION_FAILED",
    "DEFAULT_TOKEN_WINDOW",
    "DEFAULT_TOMBSTONE_TTL",
    "ENTRY_ERRORS",
    "ITEM_OVERHEAD_BYTES",
    "MAX_BATCH_GET",
    "MAX_ITEM_BYTES",
    "MAX_TAG_BYTES",
    "MAX_TOKEN_BYTES",
    "MAX_TRANSACTION_BYTES",
    "MAX_TRANSACTION_ITEMS",
    "MAX_TTL",
    "MAX_UNPROCESSED_ROUNDS",
    "RETRYABLE_CANCELLATIONS",
    "TRANSACTION_CANCELED",
    "TRANSACTION_CONFLICT",
    "WRITE_TOKEN_BYTES",
    "_ATTRIBUTES",
    "Call",
    "CancelReport",
    "Chains",
    "ClientStats",
    "Effect",
    "Entry",
    "Op",
    "Outcome",
    "Sleep",
    "_check_mapping",
    "_copy_error",
    "_error_code",
    "_moved",
    "_names",
    "_reaches_back",
    "check_fits",
    "check_reason",
    "check_tag",
    "check_tags",
    "check_token",
    "check_ttl",
    "check_wait",
    "chunked",
    "collect_many",
    "create_entries",
    "many_entries",
    "one_entry",
    "plan_batch",
    "transaction_bytes",
    "unwrap",
]
