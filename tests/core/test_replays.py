"""A replayed stamp (same token) is applied once, and only its chain's completer is told acked."""

from __future__ import annotations

from typing import Any

import pytest

from xor_ack_dynamodb import new_stamp, xor
from xor_ack_dynamodb.errors import TagNotFound


@pytest.mark.parametrize("transact", [False, True])
async def test_replays_on_an_acked_chain_tell_only_the_completer(ack: Any, transact: bool) -> None:
    a, b, c = new_stamp(), new_stamp(), new_stamp()
    await ack.create("foo", xor(a, b, c))
    await ack.create("bar", xor(a, b))
    await ack.stamp("foo", a, token="ta")
    await ack.stamp("foo", b, token="tb")
    assert (await ack.stamp("foo", c, token="tc")).acked
    await ack.stamp("bar", a)  # no token
    assert (await ack.stamp("bar", b, token="tb")).acked
    # A worker that died before it heard back sends its stamps again: applied once each,
    # and the one ack of each chain is told to the completer's replay only.
    for tag, stamp, token in (("foo", a, "ta"), ("foo", b, "tb")):
        with pytest.raises(TagNotFound):
            await ack.stamp(tag, stamp, token=token)
    if transact:
        again = await ack.stamp_many(
            {"foo": c, "bar": b}, tokens={"foo": "tc", "bar": "tb"}, transact=True
        )
        assert again["foo"].acked and again["bar"].acked
    else:
        assert (await ack.stamp("foo", c, token="tc")).acked
        assert (await ack.stamp("bar", b, token="tb")).acked
    assert (await ack.get("foo")).version == 4 and (await ack.get("bar")).version == 3
