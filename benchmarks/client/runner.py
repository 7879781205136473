"""Running a case: one measured run, rounds merged, implementations interleaved round by round."""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from xor_ack_dynamodb import Stamp

from . import cases
from .cases import Case, Plan, Result, deal, make_plans, quantile, setup
from .common import SCALING_WRITERS
from .impls import Impl


async def run_case(impl: Impl, case: Case) -> Result:
    plans = make_plans(case)
    setup_cpu0 = time.process_time()
    if not case.whole:
        await setup(impl, plans)
    setup_cpu = time.process_time() - setup_cpu0
    worker = impl.cold() if case.cold else impl
    lanes = deal(plans, case.writers)
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    acked: Counter[str] = Counter()

    async def chains(own: Sequence[Plan]) -> None:
        """Whole chains, one after the other: create, parent stamp, children (latency: the
        chain's, start to finish)."""
        for plan in own:
            t0 = time.perf_counter()
            try:
                await worker.create(plan.tag, plan.root)
                for value in (plan.parent, *plan.children):
                    if (await worker.stamp(plan.tag, value)).acked:
                        acked[plan.tag] += 1
            except Exception as exc:  # counted and reported: a failed chain fails the case
                errors[type(exc).__name__] += 1
            latencies.append(time.perf_counter() - t0)

    async def lane(jobs: list[tuple[str, Stamp]]) -> None:
        for tag, value in jobs:
            t0 = time.perf_counter()
            try:
                result = await worker.stamp(tag, value)
            except Exception as exc:  # counted and reported: a failed stamp fails the case
                errors[type(exc).__name__] += 1
            else:
                if result.acked:
                    acked[tag] += 1
            latencies.append(time.perf_counter() - t0)

    calls0, sends0 = impl.counter.snapshot()
    units0 = impl.counter.units()
    stats0 = worker.stats()
    server0 = cases.server_seconds()
    sys0 = os.times().system
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if case.whole:
        await asyncio.gather(*(chains(plans[w :: case.writers]) for w in range(case.writers)))
    else:
        await asyncio.gather(*(lane(jobs) for jobs in lanes))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    system = os.times().system - sys0
    server1 = cases.server_seconds()
    calls1, sends1 = impl.counter.snapshot()
    units1 = impl.counter.units()
    stats1 = worker.stats()
    closed = 0
    for plan in plans:
        closed += await impl.closed(plan.tag)
    return Result(
        impl=impl.name,
        scenario=case.scenario,
        writers=case.writers,
        chains=case.chains,
        stamps=case.chains * case.stamps_per_chain,
        seconds=wall,
        cpu_seconds=cpu,
        server_cpu_seconds=None if server0 is None or server1 is None else server1 - server0,
        http_sends=sends1 - sends0,
        calls=dict(calls1 - calls0),
        errors=dict(errors),
        chains_acked_once=sum(1 for p in plans if acked[p.tag] == 1),
        chains_closed=closed,
        latency_ms_p50=1e3 * quantile(latencies, 0.50),
        latency_ms_p99=1e3 * quantile(latencies, 0.99),
        own_stats={k: stats1.get(k, 0) - stats0.get(k, 0) for k in stats1},
        round_stamps_per_s=[round(case.chains * case.stamps_per_chain / wall, 1)],
        setup_cpu_seconds=setup_cpu,
        read_units=None if units0 is None or units1 is None else units1[0] - units0[0],
        write_units=None if units0 is None or units1 is None else units1[1] - units0[1],
        answers_with_capacity=0 if units0 is None or units1 is None else units1[2] - units0[2],
        system_cpu_seconds=system,
    )


def merge(results: Sequence[Result]) -> Result:
    """Rounds of one case as one measurement (totals; latency quantiles of the median round)."""
    first = results[0]
    mid = sorted(results, key=lambda r: r.stamps_per_s)[len(results) // 2]
    calls: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for r in results:
        calls.update(r.calls)
        errors.update(r.errors)
        own.update(r.own_stats)
    return Result(
        impl=first.impl,
        scenario=first.scenario,
        writers=first.writers,
        chains=sum(r.chains for r in results),
        stamps=sum(r.stamps for r in results),
        seconds=sum(r.seconds for r in results),
        cpu_seconds=sum(r.cpu_seconds for r in results),
        server_cpu_seconds=(
            None
            if any(r.server_cpu_seconds is None for r in results)
            else sum(r.server_cpu_seconds or 0.0 for r in results)
        ),
        http_sends=sum(r.http_sends for r in results),
        calls=dict(calls),
        errors=dict(errors),
        chains_acked_once=sum(r.chains_acked_once for r in results),
        chains_closed=sum(r.chains_closed for r in results),
        latency_ms_p50=mid.latency_ms_p50,
        latency_ms_p99=mid.latency_ms_p99,
        own_stats=dict(own),
        round_stamps_per_s=[x for r in results for x in r.round_stamps_per_s],
        setup_cpu_seconds=sum(r.setup_cpu_seconds for r in results),
        read_units=_total([r.read_units for r in results]),
        write_units=_total([r.write_units for r in results]),
        answers_with_capacity=sum(r.answers_with_capacity for r in results),
        system_cpu_seconds=sum(r.system_cpu_seconds for r in results),
    )


def _total(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v or 0.0 for v in values)


async def side_by_side(
    impls: Sequence[Impl], case: Case, rounds: int = 1, rounds_for: dict[str, int] | None = None
) -> dict[str, Result]:
    """Run ``case`` for every implementation, round by round, alternating the order.

    Interleaving short rounds makes a change of load on the machine hit both alike.
    ``rounds_for`` gives some implementations more (or fewer) rounds.
    """
    counts = {impl.name: (rounds_for or {}).get(impl.name, rounds) for impl in impls}
    per: dict[str, list[Result]] = {impl.name: [] for impl in impls}
    for r in range(max(counts.values())):
        order = impls if r % 2 == 0 else list(reversed(impls))
        for impl in order:
            if r < counts[impl.name]:
                per[impl.name].append(await run_case(impl, case))
    out = {name: merge(rs) for name, rs in per.items()}
    line = "  ".join(
        f"{n}: {r.stamps_per_s:8.1f} stamps/s {r.requests_per_stamp:6.3f} req/stamp"
        f"{'' if r.exact else ' NOT EXACT ' + str(r.errors)}"
        for n, r in out.items()
    )
    print(f"  {case.scenario:<22} w={case.writers:<4} {line}", flush=True)
    return out


@dataclass(frozen=True)
class Sizes:
    """How big each scenario is; every uncontended case runs in interleaved rounds."""

    rounds: int  # rounds of each uncontended case, seed and ours alternating
    uncontended_chains: int  # per round, 1 task
    parallel_chains: int  # per round, 8 tasks
    cold_chains: int  # per round
    children: int  # stamps per chain in the uncontended cases
    hot_rounds_ours: int  # the seed's hot chain runs once (it takes tens of seconds)
    hot_without_coalescing: bool
    uncontended_without_coalescing: bool
    scaling_writers: tuple[int, ...]
    scaling_stamps: int  # stamps per scaling point (at least one per writer)
    scaling_rounds: int
    profile_chains: int
    hot_stamps: int = 512  # children of the hot chain, stamped by 64 writers


FULL = Sizes(
    # 24 rounds: with 8, full runs made minutes apart gave 1.41x to 1.66x for the same
    # 1-task code path; the median of more back-to-back pairs moves less with the load.
    rounds=24,
    uncontended_chains=30,
    parallel_chains=32,
    cold_chains=40,
    children=4,
    hot_rounds_ours=5,
    hot_without_coalescing=True,
    uncontended_without_coalescing=True,
    scaling_writers=SCALING_WRITERS,
    scaling_stamps=256,
    scaling_rounds=3,
    profile_chains=100,
)
QUICK = Sizes(
    rounds=2,
    uncontended_chains=20,
    parallel_chains=24,
    cold_chains=16,
    children=4,
    hot_rounds_ours=2,
    hot_without_coalescing=False,
    uncontended_without_coalescing=False,
    scaling_writers=(1, 4, 16, 64),
    scaling_stamps=64,
    scaling_rounds=1,
    profile_chains=40,
)
