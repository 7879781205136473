"""``--request-costs``: what each request shape costs DynamoDB Local and the client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aioboto3

from xor_ack_dynamodb import Stamp, XorAckDynamoDB, new_stamp
from xor_ack_dynamodb.dynamodb._core.effects import Call, Entry
from xor_ack_dynamodb.dynamodb._core.expressions import Compare, Update
from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.retry import botocore_config

from . import cases
from .common import CREDENTIALS, POOL, REGION, STAMP_BYTES, make_tables

#: Request shapes compared by ``--request-costs``.
SHAPES = (
    "seed: GetItem, consistent read",
    "seed: PutItem, condition #stamp = :old",
    "ours: UpdateItem as the core builds it (update + condition expressions)",
    "ours: the same with token_window=8 instead of 32",
    "alternative: the same write as legacy AttributeUpdates + Expected",
    "alternative: the same write as a conditional PutItem of the whole item",
)


def _legacy(update: Update) -> dict[str, Any]:
    """The core's stamp write with the same effect and condition, in legacy parameters.

    Built from the structured write (``Update``), as the client renders its own request.
    """
    expected: dict[str, Any] = {}
    for term in update.condition:
        if not isinstance(term, Compare) or term.op != "=":
            raise ValueError(f"no legacy form for the condition {term!r}")
        expected[term.attribute] = {"Value": term.value.value, "ComparisonOperator": "EQ"}
    return {
        "TableName": update.table,
        "Key": update.key,
        "AttributeUpdates": {a: {"Value": v.value, "Action": "PUT"} for a, v in update.set},
        "Expected": expected,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def _whole_item(update: Update, created_at: float) -> dict[str, Any]:
    """The same write as a PutItem of the whole item (attributes it does not carry are lost)."""
    condition = {t.attribute: t.value for t in update.condition if isinstance(t, Compare)}
    item = {
        **update.key,
        **{attribute: value.value for attribute, value in update.set},
        "chain_id": condition["chain_id"].value,
        "created_at": {"N": str(created_at)},
    }
    return {
        "TableName": update.table,
        "Item": item,
        "ConditionExpression": "#v = :old AND #c = :c",
        "ExpressionAttributeNames": {"#v": "version", "#c": "chain_id"},
        "ExpressionAttributeValues": {
            ":old": condition["version"].value,
            ":c": condition["chain_id"].value,
        },
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


async def request_costs(
    endpoint: str, out: Path, rounds: int = 7, lanes: int = 8, per: int | None = None
) -> str:
    """DynamoDB Local and client CPU per request for each shape, ``lanes`` keys in parallel.

    The "ours" shapes send the request the core's ``stamp_batch`` builds (read from its
    sans-I/O generator) and feed the response back, so versions and tokens advance as
    in the client; the alternatives rewrite that same request.  Shapes run in
    interleaved rounds; the first round only warms DynamoDB Local up.
    """
    per = per or 320 // lanes  # the same number of requests per round, whatever the lanes
    table = f"bench-costs-{int(time.time())}"
    make_tables(endpoint, [table])
    server = cases.watch_server()
    session = aioboto3.Session()
    config = botocore_config(max_pool_connections=POOL)
    samples: dict[str, list[tuple[float, float, float]]] = {s: [] for s in SHAPES}
    async with session.client(
        "dynamodb", endpoint_url=endpoint, region_name=REGION, config=config, **CREDENTIALS
    ) as client:
        ack = XorAckDynamoDB(client, table=table)
        core = Chains(table=table)
        small = Chains(table=table, token_window=8)
        last: dict[str, Stamp] = {}

        async def one(shape: str, tag: str) -> None:
            if shape == SHAPES[0]:
                await client.get_item(
                    TableName=table, Key={"tagID": {"S": tag}}, ConsistentRead=True
                )
                return
            if shape == SHAPES[1]:
                value = new_stamp(STAMP_BYTES)
                await client.put_item(
                    TableName=table,
                    Item={"tagID": {"S": tag}, "stamp": {"B": bytes(value)}},
                    ConditionExpression="#stamp = :old",
                    ExpressionAttributeNames={"#stamp": "stamp"},
                    ExpressionAttributeValues={":old": {"B": bytes(last[tag])}},
                )
                last[tag] = value
                return
            chains = small if shape == SHAPES[3] else core
            op = chains.stamp_batch(tag, [Entry(new_stamp(STAMP_BYTES))])
            call = next(op)
            state = chains.cached(tag)
            if not isinstance(call, Call) or call.batch is None or state is None:
                raise RuntimeError("the core did not start with a write: is the cache empty?")
            if shape in SHAPES[2:4]:
                response = await client.update_item(**call.params)
            elif shape == SHAPES[4]:
                response = await client.update_item(**_legacy(call.batch))
            else:
                response = await client.put_item(**_whole_item(call.batch, state.created_at))
            with contextlib.suppress(StopIteration):
                op.send(response)

        async def lane(shape: str, tag: str) -> None:
            for _ in range(per):
                await one(shape, tag)

        for r in range(rounds):
            print(f"  round {r + 1}/{rounds}", flush=True)
            for shape in SHAPES if r % 2 == 0 else tuple(reversed(SHAPES)):
                tags = [f"cost-{r}-{SHAPES.index(shape)}-{i}" for i in range(lanes)]
                for tag in tags:
                    last[tag] = new_stamp(STAMP_BYTES)
                    await ack.create(tag, last[tag])
                    state = await ack.get(tag)
                    core.remember(state, tag)
                    small.remember(state, tag)
                server0, cpu0, wall0 = server.seconds(), time.process_time(), time.perf_counter()
                await asyncio.gather(*(lane(shape, tag) for tag in tags))
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                server1 = server.seconds()
                if server0 is None or server1 is None:
                    raise RuntimeError("DynamoDB Local's CPU time is not readable from /proc")
                n = lanes * per
                if r:
                    samples[shape].append(((server1 - server0) / n, cpu / n, n / wall))

    def med(shape: str, i: int) -> float:
        return statistics.median(s[i] for s in samples[shape])

    rows = {
        shape: {
            "server_us": round(1e6 * med(shape, 0)),
            "client_us": round(1e6 * med(shape, 1)),
            "requests_per_s": round(med(shape, 2)),
        }
        for shape in SHAPES
    }
    lines = [
        "# What one request costs, by shape",
        "",
        f"`python benchmarks/bench_client.py --request-costs` on "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        f"{'' if lanes == 8 else f' (`--lanes {lanes}`)'}: {lanes} key{'s' * (lanes > 1)} "
        f"written in parallel, {per} requests each, medians of {rounds - 1} interleaved rounds "
        "(a first warm-up round is dropped). CPU is per request: the DynamoDB Local JVM's (from "
        "/proc) and this client process's (the alternatives' client figure includes "
        f"rewriting the core's request). Each key takes {per} writes, so the token list is "
        "full (32 tokens, or 8) for most of them.",
        "",
        "| request | DynamoDB Local CPU µs | client CPU µs | requests/s |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {shape} | {r['server_us']} | {r['client_us']} | {r['requests_per_s']} |"
        for shape, r in rows.items()
    ]
    get, put, ours = (rows[s] for s in SHAPES[:3])
    lines += [
        "",
        f"A seed stamp (GetItem + PutItem) costs DynamoDB Local "
        f"{get['server_us'] + put['server_us']} µs and the client "
        f"{get['client_us'] + put['client_us']} µs; ours (one UpdateItem) "
        f"{ours['server_us']} µs and {ours['client_us']} µs.",
    ]
    if lanes == 1:
        ms = {shape: 1e3 / r["requests_per_s"] for shape, r in rows.items()}
        lines += [
            "",
            "With one key at a time each request waits for the one before, so requests/s is "
            f"one over the latency: GetItem {ms[SHAPES[0]]:.2f} ms, PutItem "
            f"{ms[SHAPES[1]]:.2f} ms, ours' UpdateItem {ms[SHAPES[2]]:.2f} ms. A seed stamp "
            f"takes the first two ({ms[SHAPES[0]] + ms[SHAPES[1]]:.2f} ms), ours the third: "
            f"{(ms[SHAPES[0]] + ms[SHAPES[1]]) / ms[SHAPES[2]]:.2f}x for the requests alone "
            "(botocore included, neither client's own code).",
        ]
    text = "\n".join(lines) + "\n"
    stem = "request_costs" if lanes == 8 else f"request_costs-{lanes}-lane{'s' * (lanes > 1)}"
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(
        json.dumps({"lanes": lanes, "per": per, "rounds": rounds, "shapes": rows}, indent=2) + "\n"
    )
    return text
