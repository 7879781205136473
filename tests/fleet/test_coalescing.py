"""How ``Once`` shares writes among the messages of a chain: no server, a scripted client.

The client stands in for ``XorAckDynamoDB``: ``get`` and ``stamp_on_many`` on one chain in
memory, each write held until the test lets it go.  A shared write that fails fails only
the messages in it; a message cancelled while it waits is left out; the others go on.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from xor_ack_dynamodb import xor
from xor_ack_dynamodb.chain import ChainState, token_digest
from xor_ack_dynamodb.errors import ChainMoved
from xor_ack_dynamodb.fleet import Envelope, Verdict, stamp_of
from xor_ack_dynamodb.fleet.envelope import child_id, root_id
from xor_ack_dynamodb.fleet.markers import Markers
from xor_ack_dynamodb.fleet.once import Once
from xor_ack_dynamodb.stamps import Stamp

TAG = "job"
CHAIN = b"chain-01"


class ScriptedChain:
    """One chain in memory; every write waits for ``release`` and may be made to fail."""

    token_window = 64

    def __init__(self, stamp: Stamp) -> None:
        self.state = ChainState(TAG, stamp, CHAIN, 1, (b"c" * 8,), 1.0, 1.0)
        self.release = asyncio.Event()
        self.fail_next: Exception | None = None
        self.writes: list[list[bytes]] = []

    async def get(self, tag: str) -> ChainState:
        return self.state

    async def stamp_on_many(self, state: ChainState, stamps: list[tuple[bytes, Any]]) -> list[Any]:
        await self.release.wait()
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        if state.version != self.state.version:
            raise ChainMoved(TAG, state, self.state)
        self.writes.append([token for _, token in stamps])
        seen, value = [], self.state.stamp
        for stamp, _ in stamps:
            value = Stamp(xor(value, stamp))
            seen.append(value)
        tokens = self.state.tokens + tuple(token_digest(t) for _, t in stamps)
        self.state = replace(self.state, stamp=value, version=self.state.version + 1, tokens=tokens)
        return seen


def messages(n: int) -> list[Envelope]:
    root = root_id(TAG)
    return [Envelope(TAG, CHAIN, child_id(root, payload=i), parent=root, index=i) for i in range(n)]


def setup(n: int) -> tuple[ScriptedChain, Once, list[Envelope]]:
    envs = messages(n)
    chain = ScriptedChain(Stamp(xor(*(stamp_of(e.id) for e in envs))))
    once = Once(chain, Markers(None, table="t", partition_key="tagID"))  # type: ignore[arg-type]
    return chain, once, envs


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_failed_shared_write_fails_only_its_messages_and_the_others_go_on() -> None:
    chain, once, envs = setup(3)
    first = asyncio.create_task(once.apply(envs[0], envs[0].stamp))
    await settle()  # the first message writes; the others arrive while it is in flight
    rest = [asyncio.create_task(once.apply(e, e.stamp)) for e in envs[1:]]
    await settle()
    chain.fail_next = RuntimeError("a write refused by DynamoDB")
    chain.release.set()
    with pytest.raises(RuntimeError):
        await first
    results = await asyncio.gather(*rest)
    assert [r.verdict for r in results] == [Verdict.APPLIED, Verdict.APPLIED]
    assert chain.writes == [[envs[1].id, envs[2].id]]  # the two that waited: one write
    assert once.coalesced == 1 and not results[0].acked and not results[1].acked


async def test_a_message_cancelled_while_it_waits_is_left_out() -> None:
    chain, once, envs = setup(3)
    first = asyncio.create_task(once.apply(envs[0], envs[0].stamp))
    await settle()
    second, third = (asyncio.create_task(once.apply(e, e.stamp)) for e in envs[1:])
    await settle()
    second.cancel()
    await settle()
    chain.release.set()
    assert (await first).verdict is Verdict.APPLIED
    assert (await third).verdict is Verdict.APPLIED
    with pytest.raises(asyncio.CancelledError):
        await second
    assert chain.writes == [[envs[0].id], [envs[2].id]]
    assert not chain.state.stamp.acked  # the cancelled message's stamp never went out
    assert (await once.apply(envs[1], envs[1].stamp)).acked  # its redelivery acks the chain


async def test_a_refused_shared_write_is_checked_again_on_the_chain_it_returned() -> None:
    chain, once, envs = setup(3)
    stale = chain.state
    chain.release.set()
    assert (await once.apply(envs[0], envs[0].stamp)).verdict is Verdict.APPLIED
    # Planned on the state before that write: refused, then written on the chain now.
    results = await asyncio.gather(
        once.apply(envs[1], envs[1].stamp, stale), once.apply(envs[2], envs[2].stamp)
    )
    assert [r.verdict for r in results] == [Verdict.APPLIED, Verdict.APPLIED]
    assert once.conflicts == 1 and chain.state.stamp.acked
    assert [r.acked for r in results].count(True) == 1
