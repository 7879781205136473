"""Fleet benchmark: worker processes on moto's SQS and DynamoDB Local, random job trees.

Runs ``--workers`` ``xor-ack worker`` processes (moto's server in its own process,
DynamoDB Local from npm, both on 127.0.0.1), submits ``--jobs`` jobs of
``tests.fleet.jobs`` (random trees, 20 % of leaves failing once), waits until
every continuation took effect, stops the workers with SIGTERM and prints jobs/s,
messages/s, DynamoDB requests per message (writes counting the markers: pages and
continuation records) and the DynamoDB cost per million messages at on-demand
list prices.  ``--kill N`` SIGKILLs a random worker N times during the run.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_fleet.py --jobs 40 --workers 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fleet.jobs import expected_ids, root_payload  # noqa: E402
from tests.fleet.local_fleet import LocalFleet  # noqa: E402
from tests.fleet.moto_sqs_server import serve  # noqa: E402
from xor_ack_dynamodb.fleet import Fleet, SqsSender  # noqa: E402
from xor_ack_dynamodb.fleet.sqs import sqs_client  # noqa: E402
from xor_ack_dynamodb.local import LocalDynamoDB  # noqa: E402
from xor_ack_dynamodb.table import TableSpec, create_table  # noqa: E402

# On-demand list prices, us-east-1, as published on the pages named (read 2026-11-23):
# https://aws.amazon.com/dynamodb/pricing/on-demand/ : $0.625 per million write request
#   units, $0.125 per million read request units (the prices since the November 2024 cut);
# https://aws.amazon.com/step-functions/pricing/ : Standard workflows $0.025 per 1,000
#   state transitions = $25 per million;
# Powertools idempotency keeps one DynamoDB item per request, written twice (in progress,
#   then completed) and read on a repeat: at least 2 write units per message.
WRITE_PER_MILLION = 0.625
READ_PER_MILLION = 0.125
STEP_FUNCTIONS_PER_MILLION_TRANSITIONS = 25.0


# Local servers take any credentials; never reach a real account from here.
for _name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
    os.environ[_name] = "testing"
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
os.environ.pop("AWS_PROFILE", None)


async def submit(fleet: LocalFleet, tags: list[str], window: int) -> None:
    async with (
        sqs_client(endpoint=fleet.sqs_endpoint, region_name="us-east-1") as sqs,
        Fleet.connect(
            table=fleet.table,
            endpoint_url=fleet.ddb_endpoint,
            region_name="us-east-1",
            handler=lambda message: [],
            send=SqsSender(sqs, fleet.queue),
            token_window=window,
        ) as submitter,
    ):
        await asyncio.gather(
            *(submitter.submit(t, root_payload(int(t.split("-")[1]))) for t in tags)
        )


def run(args: argparse.Namespace) -> dict[str, Any]:
    with (
        serve() as sqs_endpoint,  # moto's SQS, safe against a send during a delete
        LocalDynamoDB(backend="dynamodb-local", full_jit=True) as ddb,
        (
            contextlib.nullcontext(args.workdir) if args.workdir else tempfile.TemporaryDirectory()
        ) as tmp,
    ):
        spec = TableSpec(name="fleet-bench")
        create_table(
            boto3.client("dynamodb", endpoint_url=ddb.endpoint_url, region_name="us-east-1"),
            spec,
        )
        fleet = LocalFleet(
            sqs_endpoint=sqs_endpoint,
            ddb_endpoint=ddb.endpoint_url,
            table=spec.name,
            workdir=Path(tmp),
            workers=args.workers,
            concurrency=args.concurrency,
            token_window=args.token_window,
            flaky=args.flaky,
        )
        tags = [f"job-{seed}" for seed in range(args.jobs)]
        messages = sum(len(expected_ids(t)) for t in tags)
        rng = random.Random(1)
        fleet.start()
        time.sleep(2.0)  # the workers import and connect
        started = time.monotonic()
        asyncio.run(submit(fleet, tags, args.token_window))
        kills = args.kill
        while len(fleet.continued()) < len(tags):
            if time.monotonic() - started > args.timeout:
                fleet.stop()
                done = fleet.continued()
                missing = [t for t in tags if t not in done]
                raise SystemExit(f"timed out: {len(done)} of {len(tags)} jobs; not {missing}")
            time.sleep(0.2)
            if kills and rng.random() < 0.2:
                fleet.kill_one(rng)
                kills -= 1
        elapsed = time.monotonic() - started
        fleet.stop()
        events = fleet.events()
        totals: Counter[str] = Counter()
        for stop in fleet.stops:
            totals.update({k: v for k, v in stop.items() if isinstance(v, int)})
        # The continuation records (one conditional put per job, the app's effect)
        # and the submit's creates are writes too; the handler's own result items are
        # the application's, not the fleet's, and are left out.
        creates = len(tags)
        writes = totals["dynamodb_writes"] + creates
        reads = totals["dynamodb_reads"]
        verdicts = Counter(e.get("event") for e in events)
    per_message_writes = writes / messages
    per_message_reads = reads / messages
    return {
        "jobs": len(tags),
        "messages": messages,
        "workers": args.workers,
        "concurrency": args.concurrency,
        "token_window": args.token_window,
        "killed": fleet.killed,
        "seconds": round(elapsed, 2),
        "jobs_per_s": round(len(tags) / elapsed, 2),
        "messages_per_s": round(messages / elapsed, 1),
        "dynamodb_writes": writes,
        "marker_writes": totals["marker_writes"],
        "refused_writes": totals["refused_writes"],
        "coalesced_messages": totals["coalesced"],
        "dynamodb_reads": reads,
        "writes_per_message": round(per_message_writes, 3),
        "reads_per_message": round(per_message_reads, 3),
        "applied": verdicts["applied"],
        "duplicates": verdicts["duplicate"],
        "handler_failures": totals["failed"],
        "dynamodb_usd_per_million_messages": round(
            per_message_writes * WRITE_PER_MILLION + per_message_reads * READ_PER_MILLION, 3
        ),
        "step_functions_usd_per_million_transitions": STEP_FUNCTIONS_PER_MILLION_TRANSITIONS,
        "powertools_idempotency_usd_per_million_messages_at_least": round(2 * WRITE_PER_MILLION, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--token-window", type=int, default=64)
    parser.add_argument("--flaky", type=float, default=0.2)
    parser.add_argument("--kill", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--workdir", help="where the workers' logs go (a temporary directory)")
    print(json.dumps(run(parser.parse_args()), indent=2))


if __name__ == "__main__":
    main()
