"""How to write many chains: the create and stamp paths side by side, on one DynamoDB Local.

Each path writes ``--chains`` chains of a table as ``xor-ack table create`` makes it
(stream, inventory indexes), through the counting proxy (requests, write units by
AWS's rules), in rounds that alternate the paths; per path: wall time and DynamoDB
Local's CPU per chain (and how much of it its one SQLite thread spent: every read and
write of every table goes through that thread one at a time, so it is the floor of the
wall time per chain whatever the concurrency), requests and write units per chain.

- creates: ``create`` one request per chain (``--threads`` at a time), ``create_many``
  in transactions of 100, ``create_many(via="partiql")`` 25 INSERT statements per
  request (``BatchWriteItem`` is not a path: its puts have no condition, so a create
  there would overwrite a live chain);
- stamps on known states: ``stamp_on`` one request per chain, ``stamp_many(transact=
  True)`` on cached states (100 per transaction), ``stamp_on_each`` 25 UPDATE
  statements per request;
- and the read the round does before its commit stamps: ``get_many``, 100 chains per
  ``BatchGetItem``.

    python benchmarks/bench_chain_writes.py --chains 2000 --rounds 3 --json FILE
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from client.counting_proxy import CountingProxy
from pipeline_scale import (
    DYNAMODB_LOCAL_THREADS,
    _cpu_seconds,
    create_bench_table,
    load,
    thread_cpu_seconds,
)
from results_file import recorded_args

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp
from xor_ack_dynamodb.dynamodb.aws import botocore_config, sync_client
from xor_ack_dynamodb.local import LocalDynamoDB
from xor_ack_dynamodb.table import TableSpec

CONCURRENCY = 4


def creates(ack: SyncXorAckDynamoDB, path: str, stamps: dict[str, bytes]) -> None:
    if path == "create, one request each":
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(lambda t: ack.create(t, stamps[t]), stamps))
    elif path == "create_many, transactions of 100":
        ack.create_many(stamps, concurrency=CONCURRENCY)
    else:
        ack.create_many(stamps, via="partiql", concurrency=CONCURRENCY)


def stamps(ack: SyncXorAckDynamoDB, path: str, tags: list[str]) -> None:
    states = ack.known_many(tags)  # from the cache: no request
    values = {t: new_stamp() for t in tags}
    if path == "stamp_on, one request each":
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            list(pool.map(lambda t: ack.stamp_on(states[t], values[t]), tags))  # type: ignore[arg-type]
    elif path == "stamp_many, transactions of 100":
        ack.stamp_many(values, transact=True, concurrency=CONCURRENCY)
    else:
        writes = [(states[t], values[t], None) for t in tags]
        outcomes = ack.stamp_on_each(writes, concurrency=CONCURRENCY)  # type: ignore[arg-type]
        assert not [o for o in outcomes if isinstance(o, Exception)]


def reads(ack: SyncXorAckDynamoDB, tags: list[str]) -> None:
    got = ack.get_many(tags)
    assert all(state is not None for state in got.values())


CREATES = (
    "create, one request each",
    "create_many, transactions of 100",
    "create_many, PartiQL 25",
)
STAMPS = (
    "stamp_on, one request each",
    "stamp_many, transactions of 100",
    "stamp_on_each, PartiQL 25",
)
READ = "get_many, 100 per request"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--no-stream", action="store_true", help="the table without its stream (DynamoDB Local)"
    )
    args = parser.parse_args(argv)
    runs: list[dict[str, Any]] = []
    started = load()
    with (
        LocalDynamoDB(backend="dynamodb-local", full_jit=True) as db,
        CountingProxy(db.endpoint_url) as proxy,
    ):
        ddb_pid = db.pid
        client = sync_client(
            endpoint=proxy.endpoint_url,
            region_name="us-east-1",
            config=botocore_config(max_pool_connections=16),
            local_credentials=True,
        )
        spec = TableSpec(name="bench-chain-writes")
        create_bench_table(client, spec, stream=not args.no_stream)
        ack = SyncXorAckDynamoDB(client, table=spec.name, cache_size=4 * args.chains)
        for round_ in range(-1, args.rounds):  # round -1: a warm-up of every path
            order = list(zip(CREATES, STAMPS, strict=True))
            if round_ % 2:
                order.reverse()
            for create_path, stamp_path in order:
                run = uuid.uuid4().hex[:8]
                tags = [f"{run}/file:/data/input-{i:07d}.txt#1" for i in range(args.chains)]
                firsts = {t: new_stamp() for t in tags}
                for kind, path, work in (
                    ("create", create_path, lambda p=create_path, f=firsts: creates(ack, p, f)),
                    ("stamp", stamp_path, lambda p=stamp_path, t=tags: stamps(ack, p, t)),
                    ("read", READ, lambda t=tags: reads(ack, t)),
                ):
                    proxy.reset()
                    threads0 = thread_cpu_seconds(ddb_pid, DYNAMODB_LOCAL_THREADS)
                    cpu0, t0 = _cpu_seconds(ddb_pid), time.monotonic()
                    work()
                    wall, cpu = time.monotonic() - t0, _cpu_seconds(ddb_pid) - cpu0
                    threads = thread_cpu_seconds(ddb_pid, DYNAMODB_LOCAL_THREADS)
                    counted = proxy.stats()
                    if round_ >= 0:
                        runs.append(
                            {
                                "kind": kind,
                                "path": path,
                                "round": round_,
                                "ms_per_chain": 1000 * wall / args.chains,
                                "ddb_cpu_ms_per_chain": 1000 * cpu / args.chains,
                                **{
                                    f"ddb_{group}_ms_per_chain": 1000
                                    * (threads[group] - threads0[group])
                                    / args.chains
                                    for group in DYNAMODB_LOCAL_THREADS
                                },
                                "requests_per_chain": counted["total_requests"] / args.chains,
                                "wru_per_chain": counted["wru"] / args.chains,
                            }
                        )
                    print(f"round {round_} {path}: {wall:.2f} s", file=sys.stderr)
    print(
        f"\n{args.chains:,} chains per path and round, {args.rounds} rounds, {CONCURRENCY} "
        f"requests in flight, table {'without its stream' if args.no_stream else 'as made'}, "
        f"load average {started} at the start, {load()} at the end\n"
    )
    print(
        "| path | ms per chain (median) | DynamoDB Local CPU ms per chain | of it: SQLite thread "
        "| request threads | JIT | requests per chain | write units per chain |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    table = []
    for path in (*CREATES, *STAMPS, READ):
        mine = [r for r in runs if r["path"] == path]
        row = {
            "path": path,
            "ms_per_chain": round(statistics.median(r["ms_per_chain"] for r in mine), 2),
            "ddb_cpu_ms_per_chain": round(
                statistics.median(r["ddb_cpu_ms_per_chain"] for r in mine), 2
            ),
            **{
                f"ddb_{group}_ms_per_chain": round(
                    statistics.median(r[f"ddb_{group}_ms_per_chain"] for r in mine), 2
                )
                for group in DYNAMODB_LOCAL_THREADS
            },
            "requests_per_chain": round(mine[-1]["requests_per_chain"], 3),
            "wru_per_chain": round(mine[-1]["wru_per_chain"], 2),
        }
        table.append(row)
        print(
            f"| {path} | {row['ms_per_chain']:.2f} | {row['ddb_cpu_ms_per_chain']:.2f} "
            f"| {row['ddb_sqlite_ms_per_chain']:.2f} | {row['ddb_requests_ms_per_chain']:.2f} "
            f"| {row['ddb_jit_ms_per_chain']:.2f} "
            f"| {row['requests_per_chain']:.3f} | {row['wru_per_chain']:.2f} |"
        )
    if args.json:
        data = {"args": recorded_args(args), "runs": runs, "table": table}
        data["load"] = {"start": started, "end": load(), "cpus": os.cpu_count()}
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
