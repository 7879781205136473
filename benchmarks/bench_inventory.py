"""What the inventory indexes cost per write, in write units, as DynamoDB reports them.

    python benchmarks/bench_inventory.py      # on DynamoDB Local: the table of docs/inventory.md
    python benchmarks/bench_inventory.py --endpoint-url URL --chains 50 --stamps 8

Every write the client sends (UpdateItem; TransactWriteItems for ``create_many``) gets
``ReturnConsumedCapacity=INDEXES`` added by a botocore hook, and the units DynamoDB
returns are summed per operation and per target: the table, the open index
(``xor_ack_open``) and the failed index (``xor_ack_failed``).  Reads (Query on an index,
BatchGetItem, GetItem) are counted the same way, with ``TOTAL``.  The writes are the
client's own: nothing is written by hand.

Cases, each on ``--chains`` fresh chains of ``--stamps`` stamps (the last one acks):

- ``no deadline``: ``create(tag, s)``; the chain is in the open index from create
  (``due_at`` = NEVER_DUE) until it acks.
- ``timeout``: ``create(tag, s, timeout=600)``: a fixed deadline.
- ``idle_timeout``: ``create(tag, s, idle_timeout=600)``: every stamp moves the deadline,
  so the index's sort key moves (DynamoDB: a delete and a put of the index entry).
- ``fail``: a chain with a deadline, then ``fail(tag, reason)``.
- ``sweep``: chains created with ``timeout=1`` and left to time out, then ``sweep()``.

On AWS a write unit is 1 KB of item (rounded up) per write to the table, and one
write per index entry put or deleted (an index entry of a KEYS_ONLY index is small:
1 unit); DynamoDB Local reports the same rule, which is what this script prints.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.dynamodb.item import FAILED_INDEX, OPEN_INDEX
from xor_ack_dynamodb.table import TableSpec, create_table, delete_table

WRITES = ("UpdateItem", "TransactWriteItems", "DeleteItem")
READS = ("Query", "BatchGetItem", "GetItem")
TARGETS = ("table", OPEN_INDEX, FAILED_INDEX)


@dataclass
class Meter:
    """Consumed capacity of every request, as DynamoDB returned it."""

    records: list[tuple[str, dict[str, float]]] = field(default_factory=list)

    def attach(self, client: Any) -> None:
        for op in (*WRITES, *READS):
            client.meta.events.register(f"before-parameter-build.dynamodb.{op}", self._ask)
            client.meta.events.register(f"after-call.dynamodb.{op}", self._record)

    @staticmethod
    def _ask(params: dict[str, Any], model: Any, **_: Any) -> None:
        params["ReturnConsumedCapacity"] = "INDEXES" if model.name in WRITES else "TOTAL"

    def _record(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        consumed = parsed.get("ConsumedCapacity")
        if consumed is None:
            return
        units: dict[str, float] = collections.defaultdict(float)
        for entry in consumed if isinstance(consumed, list) else [consumed]:
            if model.name in READS:
                units["read"] += float(entry.get("CapacityUnits", 0))
                continue
            units["table"] += float((entry.get("Table") or {}).get("CapacityUnits", 0))
            for name, index in (entry.get("GlobalSecondaryIndexes") or {}).items():
                units[name] += float(index.get("CapacityUnits", 0))
        self.records.append((model.name, dict(units)))

    @contextmanager
    def span(self, into: list[dict[str, float]]) -> Iterator[None]:
        """Sum what the requests inside cost into one entry of ``into``."""
        start = len(self.records)
        yield
        total: dict[str, float] = collections.defaultdict(float)
        for _, units in self.records[start:]:
            for key, value in units.items():
                total[key] += value
        into.append(dict(total))


@dataclass
class Case:
    name: str
    ops: dict[str, list[dict[str, float]]] = field(
        default_factory=lambda: collections.defaultdict(list)
    )


def _stamps(first: bytes, count: int) -> list[bytes]:
    """``count`` stamps whose XOR with ``first`` is zero: the last one acks."""
    parts = [new_stamp() for _ in range(count - 1)]
    return [*parts, xor(first, *parts)] if parts else [first]


def run_chain(
    ack: SyncXorAckDynamoDB, meter: Meter, case: Case, stamps: int, **create: Any
) -> None:
    tag = f"{case.name}-{uuid.uuid4().hex[:8]}"
    first = new_stamp()
    with meter.span(case.ops["create"]):
        ack.create(tag, first, **create)
    pieces = _stamps(first, stamps)
    for piece in pieces[:-1]:
        with meter.span(case.ops["stamp (not the last)"]):
            ack.stamp(tag, piece)
    with meter.span(case.ops["last stamp (acks)"]):
        ack.stamp(tag, pieces[-1])


def measure(endpoint: str, chains: int, stamps: int) -> tuple[list[Case], dict[str, Any]]:
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    meter = Meter()
    meter.attach(client)
    spec = TableSpec(name=f"bench-inventory-{uuid.uuid4().hex[:8]}")
    create_table(client, spec)
    ack = SyncXorAckDynamoDB(client, table=spec.name)
    cases: list[Case] = []
    try:
        for name, options in (
            ("no deadline", {}),
            ("timeout", {"timeout": 600}),
            ("idle_timeout", {"idle_timeout": 600}),
        ):
            case = Case(name)
            for _ in range(chains):
                run_chain(ack, meter, case, stamps, **options)
            cases.append(case)

        case = Case("fail")
        for _ in range(chains):
            tag = f"fail-{uuid.uuid4().hex[:8]}"
            with meter.span(case.ops["create"]):
                ack.create(tag, new_stamp(), timeout=600)
            with meter.span(case.ops["fail"]):
                ack.fail(tag, "worker lost")
        cases.append(case)

        case = Case("touch")
        for _ in range(chains):
            tag = f"touch-{uuid.uuid4().hex[:8]}"
            with meter.span(case.ops["create"]):
                ack.create(tag, new_stamp(), idle_timeout=600)
            time.sleep(0.002)  # so the moved deadline differs from the one create set
            with meter.span(case.ops["touch"]):
                ack.touch(tag)
        cases.append(case)

        case = Case("sweep")
        for _ in range(chains):
            with meter.span(case.ops["create"]):
                ack.create(f"sweep-{uuid.uuid4().hex[:8]}", new_stamp(), timeout=1)
        time.sleep(1.5)
        with meter.span(case.ops["sweep (all chains)"]):
            failed = ack.sweep()
        assert len(failed) == chains, (len(failed), chains)
        with meter.span(case.ops["empty sweep"]):
            assert ack.sweep() == []
        cases.append(case)

        listing: dict[str, Any] = {}
        for status in ("open", "failed"):
            spent: list[dict[str, float]] = []
            with meter.span(spent):
                found = list(ack.list_chains(status=status))
            listing[status] = {"chains": len(found), "read units": spent[0].get("read", 0.0)}
    finally:
        delete_table(client, spec.name)
    return cases, listing


def _cell(entries: list[dict[str, float]], key: str) -> str:
    values = [e.get(key, 0.0) for e in entries]
    low, high, mean = min(values), max(values), statistics.fmean(values)
    return f"{mean:g}" if low == high else f"{mean:.2f} ({low:g}-{high:g})"


def table(cases: list[Case]) -> str:
    head = "| case | operation | n | table WCU | open index WCU | failed index WCU | read RCU |"
    rows = [head, "| --- | --- | --- | --- | --- | --- | --- |"]
    for case in cases:
        for op, entries in case.ops.items():
            cells = [_cell(entries, key) for key in (*TARGETS, "read")]
            rows.append(f"| {case.name} | {op} | {len(entries)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint-url", help="a DynamoDB endpoint [default: DynamoDB Local]")
    parser.add_argument("--chains", type=int, default=20)
    parser.add_argument("--stamps", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.endpoint_url:
        cases, listing = measure(args.endpoint_url, args.chains, args.stamps)
        where = args.endpoint_url
    else:
        from xor_ack_dynamodb.local import LocalDynamoDB

        with LocalDynamoDB(backend="dynamodb-local", full_jit=True) as server:
            cases, listing = measure(server.endpoint_url, args.chains, args.stamps)
        where = "DynamoDB Local 3.3.0"
    if args.json:
        print(json.dumps({"cases": {c.name: c.ops for c in cases}, "listing": listing}))
        return
    print(f"{where}: {args.chains} chains per case, {args.stamps} stamps per chain")
    print()
    print(table(cases))
    print()
    for status, found in listing.items():
        print(f"list_chains({status!r}): {found['chains']} chains, {found['read units']:g} RCU")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
