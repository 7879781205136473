"""A cancelled transaction, item by item: what each reason means and what goes out next.

The tables of :mod:`.landing` decide one write's fate; a transaction that DynamoDB
cancelled wrote nothing, and says why per item (``CancellationReasons``).
``CANCELLATION`` and ``CANCELLED_ITEM`` are looked up in ``Chains._after_cancel``,
``AFTER_CANCEL`` in ``stamp_transact`` and ``create_transact``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from botocore.exceptions import ClientError

from ...errors import TransactionItemRejected
from ..aws import CancellationReason, cancellation_code, cancellation_reasons
from .landing import Refusal, Step

#: One item of a cancelled transaction, by its cancellation reason: (step, error).  The
#: transaction wrote nothing, so every item's verdict is NOT_LANDED (unless an earlier
#: send of it may have landed: then WRITE_VERDICT, per item).
RETRYABLE_CANCELLATIONS = frozenset(
    {
        "TransactionConflict",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "RequestLimitExceeded",
    }
)
CANCELLATION: dict[str, tuple[Step, Refusal]] = {
    "None": (Step.RESEND, None),  # this item was fine: another one cancelled it
    "ConditionalCheckFailed": (Step.REREAD, None),  # its Item, or a read; a race
    **dict.fromkeys(sorted(RETRYABLE_CANCELLATIONS), (Step.RETRY, None)),
}
#: Any other reason (ValidationError, ItemCollectionSizeLimitExceeded, ...): this item
#: cannot be written, whatever is retried.
OTHER_CANCELLATION: tuple[Step, Refusal] = (Step.REFUSE, TransactionItemRejected)


class Cancelled(Enum):
    """One item of a cancelled transaction: its reason, and whether the item came with it."""

    FINE = "reason None: another item cancelled the transaction"
    CONDITION_ITEM = "its condition failed, the item given (ALL_OLD)"
    CONDITION_BARE = "its condition failed, no item given"
    CONTENDED = "another writer held it, or a limit throttled it"
    REJECTED = "any other reason: it cannot be written"
    UNEXPLAINED = "no reason for it: the reasons are missing or not one per item"


class Source(Enum):
    """Where an item's state comes from after a cancellation."""

    NONE = "not needed"
    GIVEN = "the Item of its reason"
    READ = "a consistent read (BatchGetItem)"


#: What the core does with one item of a cancelled transaction: (step, a lost race:
#: counts toward the back-off, where its state comes from, the error).
CANCELLED_ITEM: dict[Cancelled, tuple[Step, bool, Source, Refusal]] = {
    Cancelled.FINE: (Step.RESEND, False, Source.NONE, None),
    Cancelled.CONDITION_ITEM: (Step.REREAD, True, Source.GIVEN, None),
    Cancelled.CONDITION_BARE: (Step.REREAD, True, Source.READ, None),
    Cancelled.CONTENDED: (Step.RETRY, True, Source.NONE, None),
    Cancelled.REJECTED: (Step.REFUSE, False, Source.NONE, TransactionItemRejected),
    Cancelled.UNEXPLAINED: (Step.REREAD, True, Source.READ, None),
}

#: After a cancelled transaction, how the items still pending go out again:
#: (operation, some met another writer, some were planned on an old remembered state
#: that the cancellation refreshed, some left it: refused, applied before, closed) ->
#: RETRY (after a back-off, as ``RetryPolicy`` allows; then StaleLocalData), RESEND (at
#: once, as another attempt) or REPLAN (at once, not counted: the cache was old, nobody
#: raced).
AFTER_CANCEL: dict[tuple[str, bool, bool, bool], Step] = {
    **{
        (op, True, refreshed, rejected): Step.RETRY
        for op in ("stamp", "create")
        for refreshed in (False, True)
        for rejected in (False, True)
        if not (op == "create" and refreshed)  # create remembers no state to refresh
    },
    ("stamp", False, True, False): Step.REPLAN,
    ("stamp", False, True, True): Step.REPLAN,
    ("stamp", False, False, True): Step.RESEND,  # only the refused ones left it
    ("stamp", False, False, False): Step.RETRY,  # cancelled for no reason it can see
    ("create", False, False, True): Step.RESEND,  # a live chain, or a refused item, left it
    ("create", False, False, False): Step.RESEND,
}


def cancelled_of(reason: CancellationReason | None) -> Cancelled:
    """Classify one item's cancellation reason (None: the reasons do not fit the items)."""
    if reason is None:
        return Cancelled.UNEXPLAINED
    step, _ = CANCELLATION.get(cancellation_code(reason), OTHER_CANCELLATION)
    if step is Step.REREAD:
        return Cancelled.CONDITION_ITEM if reason.get("Item") else Cancelled.CONDITION_BARE
    return {
        Step.RESEND: Cancelled.FINE,
        Step.RETRY: Cancelled.CONTENDED,
        Step.REFUSE: Cancelled.REJECTED,
    }[step]


def item_reasons(tags: Sequence[str], cancelled: ClientError) -> list[CancellationReason | None]:
    """Each item's reason, in the order sent; all None when AWS gave none that fit."""
    reasons = cancellation_reasons(cancelled)
    if len(reasons) != len(tags):
        return [None] * len(tags)
    return list(reasons)
