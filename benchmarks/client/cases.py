"""Workloads: a case, the chains it makes, one measurement of it, the server's CPU."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from xor_ack_dynamodb import Stamp, new_stamp, xor

from .common import STAMP_BYTES
from .impls import Impl


@dataclass(frozen=True)
class Case:
    """``chains`` chains of ``children`` child stamps each, stamped by ``writers`` tasks.

    Setup (untimed): ``create(tag, root)`` and the parent stamp ``root ^ c1 ^ ... ^ ck``.
    Measured: the children.  With one chain the children are dealt round-robin to the
    writers; with several, each writer owns whole chains and stamps them in order.

    ``whole``: the chain's life is measured, create and parent stamp included (short
    chains: a job and its children, start to finish); each writer runs its chains one
    after the other, and a result's stamps are the parent's and the children's.
    """

    scenario: str
    chains: int
    children: int
    writers: int
    cold: bool = False
    whole: bool = False

    @property
    def stamps_per_chain(self) -> int:
        """The measured stamps of one chain (the parent's too when the whole chain is)."""
        return self.children + 1 if self.whole else self.children


@dataclass
class Plan:
    tag: str
    root: Stamp
    children: list[Stamp]

    @property
    def parent(self) -> Stamp:
        return xor(self.root, *self.children)


@dataclass
class Result:
    """One implementation's measurement of one case."""

    impl: str
    scenario: str
    writers: int
    chains: int
    stamps: int
    seconds: float
    cpu_seconds: float
    server_cpu_seconds: float | None
    http_sends: int
    calls: dict[str, int]
    errors: dict[str, int]
    chains_acked_once: int
    chains_closed: int
    latency_ms_p50: float
    latency_ms_p99: float
    own_stats: dict[str, int]
    round_stamps_per_s: list[float] = field(default_factory=list)
    #: Client CPU of the untimed setup (create, parent stamp): with ``cpu_seconds``, a chain's.
    setup_cpu_seconds: float = 0.0
    #: Capacity units DynamoDB reported for the measured stamps (None: not asked for).
    read_units: float | None = None
    write_units: float | None = None
    answers_with_capacity: int = 0
    #: Of ``cpu_seconds``, the kernel's (system time: sockets, wake-ups).
    system_cpu_seconds: float = 0.0

    @property
    def stamps_per_s(self) -> float:
        return self.stamps / self.seconds if self.seconds else 0.0

    @property
    def requests_per_stamp(self) -> float:
        return self.http_sends / self.stamps if self.stamps else 0.0

    @property
    def cpu_us_per_stamp(self) -> float:
        return 1e6 * self.cpu_seconds / self.stamps if self.stamps else 0.0

    @property
    def server_cpu_us_per_stamp(self) -> float | None:
        if self.server_cpu_seconds is None or not self.stamps:
            return None
        return 1e6 * self.server_cpu_seconds / self.stamps

    @property
    def exact(self) -> bool:
        """Every chain completed, exactly one caller per chain saw acked, nothing failed."""
        return (
            not self.errors
            and self.chains_acked_once == self.chains
            and self.chains_closed == self.chains
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Back from ``as_dict`` (the derived figures are recomputed)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "stamps_per_s": round(self.stamps_per_s, 1),
            "requests_per_stamp": round(self.requests_per_stamp, 4),
            "cpu_us_per_stamp": round(self.cpu_us_per_stamp, 1),
            "server_cpu_us_per_stamp": (
                None
                if self.server_cpu_us_per_stamp is None
                else round(self.server_cpu_us_per_stamp, 1)
            ),
            "exact": self.exact,
        }


class ServerCpu:
    """CPU seconds used so far by the DynamoDB Local JVM this process started (Linux /proc)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        me = os.getpid()
        try:
            children = Path(f"/proc/{me}/task/{me}/children").read_text().split()
        except OSError:
            return
        for pid in children:
            try:
                if b"DynamoDBLocal" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    self.pid = int(pid)
            except OSError:
                continue

    def seconds(self) -> float | None:
        if self.pid is None:
            return None
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: Found again by ``watch_server`` once DynamoDB Local runs; ``run_case`` reads it.
SERVER = ServerCpu()


def watch_server() -> ServerCpu:
    """Look for the DynamoDB Local JVM among this process's children (it has started now)."""
    global SERVER
    SERVER = ServerCpu()
    return SERVER


def server_seconds() -> float | None:
    """CPU seconds of the DynamoDB Local JVM so far (None where /proc does not tell)."""
    return SERVER.seconds()


_run_id = 0


def make_plans(case: Case) -> list[Plan]:
    global _run_id
    _run_id += 1
    return [
        Plan(
            f"{case.scenario}-{_run_id}-{i}",
            new_stamp(STAMP_BYTES),
            [new_stamp(STAMP_BYTES) for _ in range(case.children)],
        )
        for i in range(case.chains)
    ]


def deal(plans: Sequence[Plan], writers: int) -> list[list[tuple[str, Stamp]]]:
    if len(plans) == 1:
        (plan,) = plans
        return [[(plan.tag, c) for c in plan.children[w::writers]] for w in range(writers)]
    return [
        [(plan.tag, c) for plan in plans[w::writers] for c in plan.children] for w in range(writers)
    ]


async def bounded(jobs: Sequence[Callable[[], Awaitable[Any]]], limit: int = 32) -> None:
    gate = asyncio.Semaphore(limit)

    async def one(job: Callable[[], Awaitable[Any]]) -> None:
        async with gate:
            await job()

    await asyncio.gather(*(one(job) for job in jobs))


async def setup(impl: Impl, plans: Sequence[Plan]) -> None:
    async def start(plan: Plan) -> None:
        await impl.create(plan.tag, plan.root)
        await impl.stamp(plan.tag, plan.parent)

    await bounded([functools.partial(start, p) for p in plans])


def quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
