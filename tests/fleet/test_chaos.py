"""The fleet under chaos: worker processes SIGKILLed at random, duplicates injected on purpose.

Asserted: every job's continuation took effect exactly once, and when it ran every
result of the job's tree was there (no chain completed early); no job was lost;
no message's write landed twice; no chain failed.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.fleet import Fleet, SqsSender
from xor_ack_dynamodb.fleet.sqs import sqs_client
from xor_ack_dynamodb.table import TableSpec

from .jobs import expected_ids, root_payload
from .local_fleet import LocalFleet

pytestmark = pytest.mark.ddblocal

JOBS = 6  # 78 messages; trees of 6 to 28 messages, depth 3 or 4
WINDOW = 8  # small, so that the pages of evicted tokens are exercised too


async def test_every_job_continues_exactly_once_while_workers_are_killed(
    sqs_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    rng = random.Random(16)
    fleet = LocalFleet(
        sqs_endpoint=sqs_endpoint,
        ddb_endpoint=ddb_local_endpoint,
        table=ddb_table.name,
        workdir=tmp_path,
        workers=3,
        token_window=WINDOW,
        visibility=6,
    )
    tags = [f"job-{seed}" for seed in range(JOBS)]
    fleet.start()
    try:
        async with (
            sqs_client(endpoint=sqs_endpoint, region_name="us-east-1") as sqs,
            Fleet.connect(
                table=ddb_table.name,
                endpoint_url=ddb_local_endpoint,
                region_name="us-east-1",
                handler=lambda message: [],
                send=SqsSender(sqs, fleet.queue),
                token_window=WINDOW,
            ) as submitter,
        ):
            for tag in tags:
                await submitter.submit(tag, root_payload(int(tag.split("-")[1])))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90
        injected = 0
        while len(fleet.continued()) < JOBS and loop.time() < deadline:
            await asyncio.sleep(2.0)
            if fleet.killed < 3:
                fleet.kill_one(rng)
            injected += fleet.inject_duplicates(tags, rng, 2)
        injected += fleet.inject_duplicates(tags, rng, 4)  # after the ends: still once
        await asyncio.sleep(3.0)
    finally:
        fleet.stop()

    events = fleet.events()
    continuations = [e for e in events if e.get("event") == "continuation"]
    effects = Counter(e["tag"] for e in continuations if e["effect"])
    assert sorted(effects) == sorted(tags), diagnose(fleet, tags, events)
    assert set(effects.values()) == {1}, "a continuation took effect twice"
    assert all(e["missing"] == 0 for e in continuations), "a chain completed early"
    assert not [e for e in events if e.get("event") == "dead-letter"]
    for tag in tags:
        state = fleet.ddb.get_item(TableName=ddb_table.name, Key={"tagID": {"S": tag}})["Item"]
        assert not any(state["stamp"]["B"]) and "failed_at" not in state
        # At most one write per message, and the create (messages of a job finishing
        # together share writes; a write is never split).  A message whose write landed
        # twice would have stalled its chain (a stamp XORed twice cancels) and been
        # reported applied twice (below).
        assert int(state["version"]["N"]) <= 1 + len(expected_ids(tag)), "more writes"
    applied = Counter(e["message_id"] for e in events if e.get("event") == "applied")
    assert set(applied.values()) == {1}, "a message was applied twice"
    # The chaos happened: workers were killed, duplicates were sent and recognised.
    assert fleet.killed >= 2 and injected > 0
    assert any(e.get("event") == "duplicate" for e in events)


def diagnose(fleet: LocalFleet, tags: list[str], events: list[dict[str, Any]]) -> str:
    """What became of the jobs that did not continue: their chains and messages."""
    lines = ["a job was lost:"]
    done = {e["tag"] for e in events if e.get("event") == "continuation"}
    for tag in tags:
        if tag in done:
            continue
        item = fleet.ddb.get_item(TableName=fleet.table, Key={"tagID": {"S": tag}})["Item"]
        seen = Counter((e.get("message_id"), e.get("event")) for e in events if e.get("tag") == tag)
        lines.append(f"{tag}: version {item['version']['N']}, failed {'failed_at' in item}")
        for message in expected_ids(tag):
            mine = {event: n for (m, event), n in seen.items() if m == message.hex()}
            lines.append(f"  {message.hex()[:8]} {mine}")
    return "\n".join(lines)
