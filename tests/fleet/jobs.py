"""Handlers the worker processes of the tests and the benchmark import (``tests.fleet.jobs:...``).

A job ``job-<seed>`` is a random tree, the same every time for a seed: each
message's children (0 to 3, fewer deeper down) follow from its own seed, so a
re-run announces the same children.  Some leaves fail on their first delivery
(transiently).  Each handler stores its result under the message's identity
(``res#...``) before it returns, as an application would; the continuation
checks that every result of the tree is there (the chain did not complete
early), and records its effect once with a conditional put (``cont#<tag>``).

Environment: ``FLEET_TABLE``, ``FLEET_ENDPOINT`` (DynamoDB), ``FLEET_FLAKY`` (share of
leaves failing once, default 0.2), ``FLEET_LOG`` (a file each process appends to).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import time
from functools import cache
from typing import Any

import boto3

from xor_ack_dynamodb.fleet import Completed, Envelope, Message, root_id


def children_of(seed: int, depth: int) -> list[dict[str, int]]:
    rng = random.Random(seed)
    width = rng.randint(1, 3) if depth >= 3 else rng.randint(0, 3) if depth > 0 else 0
    return [{"seed": rng.getrandbits(48), "depth": depth - 1} for _ in range(width)]


def root_payload(seed: int) -> dict[str, int]:
    return {"seed": seed, "depth": 3 + seed % 2}


def tree_messages(tag: str) -> list[tuple[bytes, dict[str, int], bytes | None, int | None]]:
    """Every message of the job ``tag`` (``job-<seed>``): (id, payload, parent, index)."""
    seed = int(tag.rsplit("-", 1)[1])
    messages: list[tuple[bytes, dict[str, int], bytes | None, int | None]] = []
    todo: list[tuple[bytes, dict[str, int], bytes | None, int | None]] = [
        (root_id(tag), root_payload(seed), None, None)
    ]
    while todo:
        message = todo.pop()
        messages.append(message)
        parent = Envelope(tag, b"\x01" * 8, message[0])
        for child in parent.children(children_of(message[1]["seed"], message[1]["depth"]), 1):
            todo.append((child.id, child.payload, message[0], child.index))
    return messages


def expected_ids(tag: str) -> list[bytes]:
    return [message[0] for message in tree_messages(tag)]


@cache
def _client() -> Any:
    return boto3.client(
        "dynamodb", endpoint_url=os.environ["FLEET_ENDPOINT"], region_name="us-east-1"
    )


def _log(**fields: Any) -> None:
    path = os.environ.get("FLEET_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"t": time.time(), "pid": os.getpid(), **fields}) + "\n")


def _flaky(message: Message) -> bool:
    share = float(os.environ.get("FLEET_FLAKY", "0.2"))
    digest = hashlib.blake2b(message.message_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < share


def tree(message: Message) -> list[dict[str, int]]:
    payload = message.payload
    children = children_of(payload["seed"], payload["depth"])
    if not children and message.receive_count == 1 and _flaky(message):
        raise RuntimeError("a transient failure of a leaf")
    _client().put_item(
        TableName=os.environ["FLEET_TABLE"],
        Item={"tagID": {"S": f"res#{message.tag}#{message.message_id}"}},
    )
    return children


async def continuation(done: Completed) -> None:
    await asyncio.to_thread(_continue, done)


def _continue(done: Completed) -> None:
    table = os.environ["FLEET_TABLE"]
    keys = [{"tagID": {"S": f"res#{done.tag}#{m.hex()}"}} for m in expected_ids(done.tag)]
    found = 0
    for start in range(0, len(keys), 100):
        request: Any = {table: {"Keys": keys[start : start + 100], "ConsistentRead": True}}
        while request:
            response = _client().batch_get_item(RequestItems=request)
            found += len(response["Responses"].get(table, []))
            request = response.get("UnprocessedKeys") or None
    try:
        _client().put_item(
            TableName=table,
            Item={"tagID": {"S": f"cont#{done.tag}"}},
            ConditionExpression="attribute_not_exists(tagID)",
        )
        effect = True
    except _client().exceptions.ConditionalCheckFailedException:
        effect = False
    _log(event="continuation", tag=done.tag, effect=effect, missing=len(keys) - found)


def leaf(message: Message) -> list[Any]:
    """A job of one message."""
    return []


def stuck(message: Message) -> list[Any]:
    """A blocking handler that outlasts any shutdown grace: it says it started (the file
    ``FLEET_STARTED``), then sleeps two minutes in its thread."""
    with open(os.environ["FLEET_STARTED"], "w", encoding="ascii") as started:
        started.write(message.message_id)
    time.sleep(120)
    return []
