"""A workload for the fault tests: long chains stamped by several clients at once.

Each chain is created with the XOR of its stamps, then every stamp is sent once,
spread over the clients (separate botocore clients, so their writes really race)
and sent concurrently inside each (so each client also merges them).  The chain
ends at exactly zero only if every stamp was applied exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3
from core.facade import open_client

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.retry import RetryPolicy, botocore_config

#: botocore's legacy mode: DynamoDB's 50 ms first back-off (standard mode waits up to 1 s).
FAST_BOTOCORE = botocore_config(retries={"mode": "legacy", "max_attempts": 10})
#: Lost races are retried by the client; patient enough for a few hot chains.
PATIENT = RetryPolicy(max_attempts=500, base_delay=0.001, max_delay=0.02, max_elapsed=60)


@dataclass
class Run:
    """What a run came to: each chain's callers' outcomes, and the clients' counters."""

    outcomes: dict[str, list[Stamp | BaseException]] = field(default_factory=dict)
    stats: list[dict[str, int]] = field(default_factory=list)
    seconds: float = 0.0

    def errors(self) -> list[BaseException]:
        return [o for results in self.outcomes.values() for o in results if not _ok(o)]

    def acks(self, tag: str) -> int:
        return sum(1 for o in self.outcomes[tag] if _ok(o) and o.acked)

    def total(self, counter: str) -> int:
        return sum(s[counter] for s in self.stats)


def _ok(outcome: object) -> bool:
    return isinstance(outcome, Stamp)


def direct_client(endpoint: str, table: str) -> SyncXorAckDynamoDB:
    """A fault-free client straight to the server: to set chains up and to look at them."""
    raw = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    return SyncXorAckDynamoDB(raw, table=table)


@contextlib.asynccontextmanager
async def clients(
    kinds: Sequence[str], endpoint: str, table: str, config: Any = FAST_BOTOCORE
) -> AsyncIterator[list[Any]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(
                open_client(kind, endpoint, table, retry=PATIENT, config=config)
            )
            for kind in kinds
        ]


async def stamp_chains(
    endpoint: str,
    direct: SyncXorAckDynamoDB,
    kinds: Sequence[str],
    chains: int,
    length: int,
    concurrency: int = 16,
    config: Any = FAST_BOTOCORE,
) -> Run:
    """Create ``chains`` chains of ``length`` stamps and send every stamp once through
    clients of ``kinds`` on ``endpoint``; returns every caller's outcome."""
    plan: dict[str, list[bytes]] = {}
    for n in range(chains):
        kids = [new_stamp() for _ in range(length)]
        plan[f"chain-{n}"] = kids
        direct.create(f"chain-{n}", xor(*kids))
    run = Run(outcomes={tag: [] for tag in plan})
    started = time.monotonic()
    async with clients(kinds, endpoint, direct.table, config) as acks:

        async def one_client(i: int, ack: Any) -> None:
            gate = asyncio.Semaphore(concurrency)

            async def one(tag: str, kid: bytes) -> None:
                async with gate:
                    try:
                        run.outcomes[tag].append(await ack.stamp(tag, kid))
                    except Exception as exc:  # every outcome is checked by the test
                        run.outcomes[tag].append(exc)

            mine = [(tag, kid) for tag, kids in plan.items() for kid in kids[i :: len(acks)]]
            await asyncio.gather(*(one(tag, kid) for tag, kid in mine))

        await asyncio.gather(*(one_client(i, ack) for i, ack in enumerate(acks)))
        run.stats = [ack.stats.snapshot() for ack in acks]
    run.seconds = time.monotonic() - started
    return run


def assert_each_applied_once(run: Run, direct: SyncXorAckDynamoDB, length: int) -> None:
    """No error, one ack per chain, every chain at exactly zero after as many writes as landed."""
    errors = run.errors()
    assert not errors, f"{len(errors)} stamps failed, e.g. {errors[:3]!r}"
    for tag, results in run.outcomes.items():
        assert len(results) == length
        assert run.acks(tag) == 1, f"{tag}: {run.acks(tag)} callers saw the ack"
        state = direct.get(tag)
        assert state is not None and state.acked and not any(state.stamp)
    assert run.total("stamps") == length * len(run.outcomes)
    # Every write landed once (one version each), lost a race, or was planned on an old
    # cache and planned again: nothing else moved the chains.
    landed = run.total("writes") - run.total("conflicts") - run.total("cache_refreshes")
    versions = sum(s.version for s in (direct.get(tag) for tag in run.outcomes) if s)
    assert versions == landed + len(run.outcomes)  # + each chain's create
