"""A local fleet: worker processes (``xor-ack worker``) on moto's SQS and DynamoDB Local.

Used by the chaos test and by ``benchmarks/bench_fleet.py``.  Jobs are the random
trees of ``tests.fleet.jobs``; ``kill_one`` SIGKILLs a worker and starts another,
``inject_duplicates`` re-sends envelopes of messages that may already be done.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import boto3

from xor_ack_dynamodb.fleet import Envelope

from .jobs import tree_messages
from .sqs_fixtures import make_queues

REPO = Path(__file__).resolve().parents[2]


class LocalFleet:
    def __init__(
        self,
        *,
        sqs_endpoint: str,
        ddb_endpoint: str,
        table: str,
        workdir: Path,
        workers: int = 3,
        concurrency: int = 8,
        visibility: int = 4,
        token_window: int = 64,
        flaky: float = 0.2,
    ) -> None:
        self.sqs_endpoint = sqs_endpoint
        self.ddb_endpoint = ddb_endpoint
        self.table = table
        self.workdir = workdir
        self.count = workers
        self.concurrency = concurrency
        self.visibility = visibility
        self.token_window = token_window
        self.queue, self.dead_letters = make_queues(
            sqs_endpoint, max_receives=10, visibility=visibility
        )
        self.log = workdir / "fleet.jsonl"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "FLEET_TABLE": table,
            "FLEET_ENDPOINT": ddb_endpoint,
            "FLEET_LOG": str(self.log),
            "FLEET_FLAKY": str(flaky),
        }
        self.processes: list[subprocess.Popen[bytes]] = []
        self.started = 0
        self.killed = 0
        self.stops: list[dict[str, Any]] = []
        self.sqs = boto3.client("sqs", endpoint_url=sqs_endpoint, region_name="us-east-1")
        self.ddb = boto3.client("dynamodb", endpoint_url=ddb_endpoint, region_name="us-east-1")

    # -- processes ---------------------------------------------------------------

    def _command(self) -> list[str]:
        return [
            sys.executable, "-c", "from xor_ack_dynamodb.cli import main; main()", "worker",
            "--queue-url", self.queue, "--dead-letter-queue-url", self.dead_letters,
            "--handler", "tests.fleet.jobs:tree",
            "--continuation", "tests.fleet.jobs:continuation",
            "--sqs-endpoint-url", self.sqs_endpoint, "--endpoint-url", self.ddb_endpoint,
            "--region", "us-east-1", "--table", self.table, "--wait-time", "1",
            "--visibility-timeout", str(self.visibility), "--concurrency", str(self.concurrency),
            "--token-window", str(self.token_window), "--shutdown-grace", "5",
        ]  # fmt: skip

    def _spawn(self) -> subprocess.Popen[bytes]:
        self.started += 1
        err = open(self.workdir / f"worker-{self.started}.log", "wb")  # noqa: SIM115
        out = open(self.workdir / f"worker-{self.started}.out", "wb")  # noqa: SIM115
        process = subprocess.Popen(self._command(), env=self.env, stdout=out, stderr=err)
        err.close()
        out.close()
        return process

    def start(self) -> None:
        self.processes = [self._spawn() for _ in range(self.count)]

    def kill_one(self, rng: random.Random) -> None:
        """SIGKILL a worker at random (whatever it is doing) and start a new one."""
        victim = self.processes.pop(rng.randrange(len(self.processes)))
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        self.killed += 1
        self.processes.append(self._spawn())

    def stop(self) -> None:
        """SIGTERM every worker: they finish (or release) what they hold and print stats."""
        for process in self.processes:
            process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.stops = []
        for out in sorted(self.workdir.glob("worker-*.out")):
            for line in out.read_text().splitlines():
                if line.startswith("{"):
                    self.stops.append(json.loads(line))

    # -- jobs ------------------------------------------------------------------------

    def chain_id(self, tag: str) -> bytes | None:
        item = self.ddb.get_item(
            TableName=self.table, Key={"tagID": {"S": tag}}, ConsistentRead=True
        )
        raw = item.get("Item", {}).get("chain_id")
        return None if raw is None else bytes(raw["B"])

    def inject_duplicates(self, tags: list[str], rng: random.Random, count: int) -> int:
        """Re-send ``count`` envelopes of random messages of ``tags`` (``sent=1``: no hint)."""
        sent = 0
        for _ in range(count):
            tag = rng.choice(tags)
            chain = self.chain_id(tag)
            if chain is None:
                continue
            message, payload, parent, index = rng.choice(tree_messages(tag))
            env = Envelope(tag, chain, message, payload, parent=parent, index=index, sent=1)
            self.sqs.send_message(QueueUrl=self.queue, MessageBody=env.to_json())
            sent += 1
        return sent

    def events(self) -> list[dict[str, Any]]:
        """Every JSON line the workers logged (the fleet's) and the continuations wrote."""
        lines: list[dict[str, Any]] = []
        for path in [self.log, *sorted(self.workdir.glob("worker-*.log"))]:
            if path.exists():
                for line in path.read_text(errors="replace").splitlines():
                    if line.startswith("{"):
                        with contextlib.suppress(ValueError):  # a line cut by SIGKILL
                            lines.append(json.loads(line))
        return lines

    def continued(self) -> Counter[str]:
        return Counter(
            e["tag"] for e in self.events() if e.get("event") == "continuation" and e["effect"]
        )
