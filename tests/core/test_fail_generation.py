"""``fail(tag, reason, chain_id=)``: only that generation of the chain is failed.

Against the scripted peer: another generation found by the read is not written;
one that replaced the chain between the read and the write is refused by the
write's own condition.  Without ``chain_id``, the generation ``fail`` read is the one.
"""

from __future__ import annotations

import random

import pytest

from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.errors import InvalidState, TagNotFound
from xor_ack_dynamodb.stamps import Stamp

from .peer import CHAIN, OTHER_CHAIN, TAG, Ran, condition_failed, drive, got, item

ROOT = Stamp(b"\x0f" * 16)
LIVE = item(ROOT, version=3)
REPLAYED = item(ROOT, version=1, chain_id=OTHER_CHAIN)  # failed, then created again


def chains() -> Chains:
    return Chains(table="tbl", token_window=4, rng=random.Random(7))


def test_another_generation_read_is_not_written() -> None:
    ran = Ran()
    with pytest.raises(TagNotFound):
        drive(chains().fail(TAG, "dead-letter", CHAIN), [("get_item", got(REPLAYED))], ran)
    assert ran.ops == ["get_item"]


def test_a_replay_between_read_and_write_is_refused_by_the_writes_condition() -> None:
    ran = Ran()
    with pytest.raises(TagNotFound):
        drive(
            chains().fail(TAG, "dead-letter", CHAIN),
            [("get_item", got(LIVE)), ("update_item", condition_failed(REPLAYED))],
            ran,
        )
    assert ran.ops == ["get_item", "update_item"]  # not sent again on the new generation
    write = ran.calls[1].params
    assert write["ExpressionAttributeValues"][":c"] == {"B": CHAIN}
    assert write["ExpressionAttributeNames"]["#c"] == "chain_id"
    assert write["ConditionExpression"].endswith("AND #c = :c")


def test_its_own_generation_is_failed() -> None:
    closed = item(ROOT, version=4, reason="dead-letter")
    ran = drive(
        chains().fail(TAG, "dead-letter", CHAIN),
        [("get_item", got(LIVE)), ("update_item", {"Attributes": closed})],
    )
    assert ran.result.failed and ran.result.reason == "dead-letter"


def test_without_a_generation_the_one_read_is_failed_and_no_other() -> None:
    """Without ``chain_id`` the live chain read is failed, its write conditioned on that
    generation: a chain created under the tag since (after a re-sent fail's first send
    landed, say) is not failed by it; that call says TagNotFound."""
    closed = item(ROOT, version=2, chain_id=OTHER_CHAIN, reason="failed")
    ran = drive(
        chains().fail(TAG),
        [("get_item", got(REPLAYED)), ("update_item", {"Attributes": closed})],
    )
    assert ran.result.failed
    assert ran.calls[1].params["ExpressionAttributeValues"][":c"] == {"B": OTHER_CHAIN}
    again = Ran()
    with pytest.raises(TagNotFound):
        drive(
            chains().fail(TAG),
            [("get_item", got(LIVE)), ("update_item", condition_failed(REPLAYED))],
            again,
        )
    assert again.ops == ["get_item", "update_item"]  # the new generation is not written


@pytest.mark.parametrize("bad", ["abc", b"", 7])
def test_a_chain_id_that_is_not_one_is_refused_before_anything_is_sent(bad: object) -> None:
    from xor_ack_dynamodb.dynamodb._core.validate import check_chain_id

    with pytest.raises(InvalidState):
        check_chain_id(bad)


def _live(chain_id: bytes) -> dict[str, object]:
    import time

    return item(ROOT, version=1, chain_id=chain_id, deadline=time.time() + 600)


def test_a_touch_of_another_generation_writes_nothing() -> None:
    # ``touch(chain_id=)``, as ``fail``'s: the dashboard touches the chain its page showed.
    ran = Ran()
    with pytest.raises(TagNotFound):
        drive(chains().touch(TAG, 7200, CHAIN), [("get_item", got(_live(OTHER_CHAIN)))], ran)
    assert ran.ops == ["get_item"]


def test_a_touch_raced_by_a_new_generation_is_refused_by_its_condition() -> None:
    ran = Ran()
    with pytest.raises(TagNotFound):
        drive(
            chains().touch(TAG, 7200, CHAIN),
            [
                ("get_item", got(_live(CHAIN))),
                ("update_item", condition_failed(_live(OTHER_CHAIN))),
            ],
            ran,
        )
    assert ran.ops == ["get_item", "update_item"]  # not sent again on the new generation
    assert ran.calls[1].params["ExpressionAttributeValues"][":c"] == {"B": CHAIN}
