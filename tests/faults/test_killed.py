"""Processes die: worker processes killed after sending, DynamoDB Local killed mid-run.

Every stamp carries an idempotency token, and whoever did not hear back sends it
again with the same token.  Chains are at most 24 stamps long, so each chain's
token window (32) holds every token: replays inside the window are what the
tokens promise.  Each chain must end at exactly zero (every stamp applied an odd
number of times; a double would leave it non-zero), and exactly one caller may
learn each chain's ack.

A replay is told the chain's current state, except on a complete chain: there only
the stamp that completed it is told "acked" again (``AppliedBefore`` for the rest),
so a replay that reaches a chain after it was acked does not make a second ack.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import BotoCoreError, ClientError
from core.facade import open_client

from xor_ack_dynamodb import new_stamp, xor
from xor_ack_dynamodb.dynamodb._attempts import may_have_landed
from xor_ack_dynamodb.errors import UnsettledWrite, XorAckError
from xor_ack_dynamodb.local import dynamodb_local_command, free_port, install_dynamodb_local
from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.table import TableSpec, create_table

from .chains import direct_client
from .workers import PATIENT, Assignment, rounds, work

pytestmark = pytest.mark.ddblocal
LENGTH = 24  # stamps per chain: with the create, within a token window of 32
HANG_AFTER_BATCHES = 2  # a killed worker records two batches, sends a third, and hangs


def _plan(chains: int, workers: int) -> tuple[dict[str, list[bytes]], list[list[Assignment]]]:
    kids = {f"c{n}": [new_stamp() for _ in range(LENGTH)] for n in range(chains)}
    shares: list[list[Assignment]] = [[] for _ in range(workers)]
    for tag, stamps in kids.items():
        for k, stamp in enumerate(stamps):
            shares[k % workers].append((tag, stamp, f"{tag}/{k}"))
    return kids, shares


def _first_outcomes(files: list[Path]) -> dict[str, str]:
    """Each token's first recorded outcome: the original worker's, else its re-run's."""
    first: dict[str, str] = {}
    for file in files:
        for line in file.read_text().splitlines():
            token, _, outcome = line.partition(" ")
            if outcome and not token.startswith("#"):
                first.setdefault(token, outcome)
    return first


def _acks_per_chain(first: dict[str, str]) -> Counter[str]:
    return Counter(token.partition("/")[0] for token, o in first.items() if o == "acked")


def _wait_for(check: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_workers_killed_after_sending_are_rerun_and_nothing_applies_twice(
    ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    direct = direct_client(ddb_local_endpoint, ddb_table.name)
    kids, shares = _plan(chains=20, workers=4)
    direct.create_many({tag: xor(*stamps) for tag, stamps in kids.items()})
    spawn = multiprocessing.get_context("spawn")
    killed = {0, 1}  # these hang after sending their third batch, and are killed there
    hang = [sum(len(b) for b in rounds(share)[:HANG_AFTER_BATCHES]) for share in shares]
    logs = [tmp_path / f"worker-{w}.log" for w in range(4)]
    procs = [
        spawn.Process(
            target=work,
            args=(
                ddb_local_endpoint,
                ddb_table.name,
                share,
                str(logs[w]),
                hang[w] if w in killed else -1,
            ),
            daemon=True,
        )
        for w, share in enumerate(shares)
    ]
    for proc in procs:
        proc.start()
    try:
        for w in killed:
            _wait_for(lambda w=w: "sent" in _lines(logs[w]), 60, f"worker {w} to send")
            os.kill(procs[w].pid, signal.SIGKILL)  # type: ignore[arg-type]
        for w, proc in enumerate(procs):
            proc.join(60)
            assert proc.exitcode == (-signal.SIGKILL if w in killed else 0)
        # They died with a batch sent but unrecorded: the stamps they had sent are the
        # ones they recorded and that batch (of distinct chains, one per chain).
        sent = {w: len(rounds(shares[w])[HANG_AFTER_BATCHES]) + hang[w] for w in killed}
        assert all(_recorded(logs[w]) == hang[w] for w in killed)
        # Run the killed workers' whole shares again, with the same tokens.
        reruns = [tmp_path / f"rerun-{w}.log" for w in killed]
        again = [
            spawn.Process(
                target=work, args=(ddb_local_endpoint, ddb_table.name, shares[w], str(out))
            )
            for w, out in zip(sorted(killed), reruns, strict=True)
        ]
        for proc in again:
            proc.start()
        for proc in again:
            proc.join(60)
            assert proc.exitcode == 0
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    first = _first_outcomes(logs + reruns)
    assert len(first) == sum(len(share) for share in shares)  # every stamp has an outcome
    assert not [o for o in first.values() if o.startswith("error")]
    assert _acks_per_chain(first) == dict.fromkeys(kids, 1)  # exactly one caller per chain
    # The re-runs found the stamps their predecessors had sent (and recorded, or not):
    # applied before, so not applied again.
    for w, rerun in zip(sorted(killed), reruns, strict=True):
        (applied,) = [int(line.split()[1]) for line in _lines(rerun) if line.startswith("#")]
        assert applied == len(shares[w]) - sent[w]
    for tag in kids:
        state = direct.get(tag)
        assert state is not None and state.acked and not any(state.stamp)
        assert state.version == 1 + LENGTH  # one write per stamp here: none applied twice


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _recorded(path: Path) -> int:
    return sum(1 for line in _lines(path) if " " in line and not line.startswith("#"))


class _Server:
    """DynamoDB Local on a fixed port over a data directory, to kill -9 and start again."""

    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        data_dir.mkdir(parents=True, exist_ok=True)
        # its temporary files (killed: never removed by the JVM) in pytest's folder
        scratch = data_dir.parent / "scratch"
        scratch.mkdir(exist_ok=True)
        self.cmd = dynamodb_local_command(
            install_dynamodb_local(), port=self.port, data_dir=data_dir, scratch=scratch
        )
        self.cmd[1:1] = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]  # starts twice as fast
        self.proc: subprocess.Popen[bytes] | None = None
        self.probe = boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            config=botocore_config(connect_timeout=1, read_timeout=2, retries={"max_attempts": 1}),
        )

    def start(self) -> None:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def answers() -> bool:
            assert self.proc is not None and self.proc.poll() is None, "DynamoDB Local died"
            try:
                self.probe.list_tables()
            except (BotoCoreError, ClientError):
                return False
            return True

        _wait_for(answers, 60, "DynamoDB Local to answer")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()  # SIGKILL: no shutdown hook runs
            self.proc.wait()
            self.proc = None


async def test_dynamodb_local_killed_and_restarted_mid_run_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    """Callers that get a botocore error (or ``UnsettledWrite``: the write's answer and
    the read that would settle it both lost) send the same stamp again, with the same
    token, until the server is back.  Each error must be typed, the writes acknowledged before
    the kill must survive it (``-dbPath``), and no stamp may land twice."""
    server = _Server(tmp_path / "db")
    server.start()
    try:
        spec = TableSpec(name="restarts")
        create_table(server.probe, spec)
        direct = direct_client(server.endpoint_url, spec.name)
        kids, shares = _plan(chains=10, workers=3)
        direct.create_many({tag: xor(*stamps) for tag, stamps in kids.items()})
        quick = botocore_config(
            connect_timeout=1, read_timeout=3, retries={"mode": "legacy", "max_attempts": 3}
        )
        first: dict[str, str] = {}  # each token's outcome, once its caller heard one
        felt: list[BaseException] = []  # every error a caller saw on the way
        restarted = threading.Event()
        killed = threading.Event()

        def kill_and_restart() -> None:
            _wait_for(lambda: len(first) >= 60, 60, "60 stamps before the kill")
            server.kill()
            killed.set()
            server.start()
            restarted.set()

        async def one(ack: Any, tag: str, stamp: bytes, token: str) -> None:
            # Past 120 stamps a caller waits for the kill: on a loaded machine the killer
            # thread once woke only after all 240 had landed, and no caller felt the kill.
            while len(first) >= 120 and not killed.is_set():
                await asyncio.sleep(0.01)
            for _ in range(600):  # at most about two minutes, then the test fails
                try:
                    result = await ack.stamp(tag, stamp, token=token)
                except (BotoCoreError, ClientError, UnsettledWrite) as exc:
                    felt.append(exc)  # sent again with the same token, as the error says
                    await asyncio.sleep(0.2)
                    continue
                first[token] = "acked" if result.acked else "stamped"
                await asyncio.sleep(0.005)  # spread the run over the kill
                return

        killer = threading.Thread(target=kill_and_restart, daemon=True)
        killer.start()
        async with contextlib.AsyncExitStack() as stack:
            acks = [
                await stack.enter_async_context(
                    open_client(kind, server.endpoint_url, spec.name, retry=PATIENT, config=quick)
                )
                for kind in ("async", "async", "sync")
            ]

            async def client_run(ack: Any, share: list[Assignment]) -> None:
                for i in range(0, len(share), 4):
                    await asyncio.gather(*(one(ack, *item) for item in share[i : i + 4]))

            await asyncio.gather(*(client_run(a, s) for a, s in zip(acks, shares, strict=True)))
        killer.join(90)
        assert restarted.is_set() and felt  # the kill was felt
        kinds = Counter(type(e).__name__ for e in felt)
        open_ = sum(1 for e in felt if not isinstance(e, XorAckError) and may_have_landed(e))
        print(f"{len(felt)} errors on the way ({open_} left open), {len(first)} stamps: {kinds}")
        # Every caller heard back in the end, and every error on the way was typed.
        assert len(first) == sum(len(share) for share in shares)
        assert all(isinstance(e, (XorAckError, BotoCoreError, ClientError)) for e in felt)
        # One caller per chain was told its ack; each chain is at exactly zero.
        assert _acks_per_chain(first) == dict.fromkeys(kids, 1)
        for tag in kids:
            state = direct.get(tag)
            assert state is not None and state.acked and not any(state.stamp)
    finally:
        server.kill()
