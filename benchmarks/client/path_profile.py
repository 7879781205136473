"""``--profile-paths``: where our client's CPU goes, by path of the package, under cProfile.

Three workloads of ours (the seed has none of these paths): uncontended chains from
8 tasks (the scheduler's plain path), one hot tag with 64 writers (queueing and
coalescing), and two client objects racing on each chain (lost races: the proof that
decides whether a write landed, and the state read back).  Each runs under cProfile with
a CPU-time timer; self CPU is grouped by path of ``xor_ack_dynamodb`` (scheduler, settle,
proof, batching, the core's plan) and by library for the rest, a standard-library
function's time counting for its caller (``cpu_profile.attribute``), and scaled to the
CPU of the same work run without the profiler.  Writes ``profile-paths.md``,
``profile-paths.json`` and ``profile-paths-<workload>.txt`` (pstats of the package's
functions) to ``--out``.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aioboto3

from xor_ack_dynamodb import Stamp
from xor_ack_dynamodb.retry import botocore_config

from .cases import Case, bounded, deal, make_plans, setup
from .common import CREDENTIALS, POOL, REGION, make_tables
from .counting import RequestCounter
from .cpu_profile import Func, StatsTable, attribute, direct_category, short_path
from .impls import OursImpl

SCHEDULER = "ours: scheduler (submit, write queue, coalescing, flush, drain)"
SETTLE = "ours: settle (after a failed write: is it proven not landed, read back)"
PROOF = "ours: proof (did a write land: its tokens on the item)"
BATCHES = "ours: PartiQL batches"
CORE = "ours: core plan (_core: params, decode, merge of stamps)"
PACKAGE = "ours: rest of xor_ack_dynamodb"
PATHS = (SCHEDULER, SETTLE, PROOF, BATCHES, CORE, PACKAGE)


def path_category(func: Func) -> str | None:
    """A package function's path (by name first, then module); a library's as cpu_profile."""
    filename, _, name = func
    if "xor_ack_dynamodb/" not in filename:
        return direct_category(func)
    module = filename.rsplit("/", 1)[-1]
    if "settle" in name:
        return SETTLE
    if "landed" in name or "proof" in name:
        return PROOF
    ours = filename.endswith(("xor_ack_dynamodb/dynamodb/client.py", "/_client.py"))
    if ours or "sched" in module:
        return SCHEDULER
    if module == "_batches.py":
        return BATCHES
    if "/_core/" in filename:
        return CORE
    return PACKAGE


Lane = Callable[[], Awaitable[Any]]


def _stamping(impl: OursImpl, jobs: Sequence[tuple[str, Stamp]]) -> Lane:
    async def lane() -> None:
        for tag, value in jobs:
            await impl.stamp(tag, value)

    return lane


async def _workloads(
    client: Any, table: str, counter: RequestCounter, chains: int, hot_stamps: int, k: int
) -> dict[str, tuple[int, Callable[[], Awaitable[None]]]]:
    """Each workload's stamps and its measured phase (setup done here, untimed)."""
    plain = OursImpl(client, table, counter)
    other = OursImpl(client, table, counter)  # a second client object: its own cache
    out: dict[str, tuple[int, Callable[[], Awaitable[None]]]] = {}

    parallel = make_plans(Case("paths-8", chains, k, 8))
    await setup(plain, parallel)
    lanes8 = [_stamping(plain, jobs) for jobs in deal(parallel, 8)]
    out["8 tasks"] = (chains * k, lambda: bounded(lanes8, limit=8))

    hot = make_plans(Case("paths-hot", 1, hot_stamps, 64))
    await setup(plain, hot)
    lanes_hot = [_stamping(plain, jobs) for jobs in deal(hot, 64)]
    out["hot tag"] = (hot_stamps, lambda: bounded(lanes_hot, limit=64))

    race = make_plans(Case("paths-race", chains, k, 2))
    await setup(plain, race)
    for plan in race:  # both objects know each chain, so each write goes out at once
        await other.ack.get(plan.tag)
    racing: list[Lane] = []
    for plan in race:
        racing.append(_stamping(plain, [(plan.tag, c) for c in plan.children[0::2]]))
        racing.append(_stamping(other, [(plan.tag, c) for c in plan.children[1::2]]))
    out["two clients racing"] = (chains * k, lambda: bounded(racing, limit=16))
    return out


async def profile_paths(endpoint: str, out: Path, *, chains: int, hot_stamps: int, k: int) -> str:
    table = f"bench-paths-{int(time.time())}"
    make_tables(endpoint, [table])
    session = aioboto3.Session()
    config = botocore_config(max_pool_connections=POOL)
    report: dict[str, Any] = {}
    async with session.client(
        "dynamodb", endpoint_url=endpoint, region_name=REGION, config=config, **CREDENTIALS
    ) as client:
        counter = RequestCounter()
        counter.install(client)
        # Warm-up: DynamoDB Local's JIT and the pools, not profiled.
        for _, run in (await _workloads(client, table, counter, 16, 64, k)).values():
            await run()
        # The same work twice: plain (its CPU is the figure), then under the profiler
        # (which costs several times the CPU it measures: its split is scaled back).
        plain: dict[str, float] = {}
        for name, (_, run) in (
            await _workloads(client, table, counter, chains, hot_stamps, k)
        ).items():
            cpu0 = time.process_time()
            await run()
            plain[name] = time.process_time() - cpu0
        for name, (stamps, run) in (
            await _workloads(client, table, counter, chains, hot_stamps, k)
        ).items():
            print(f"  profiling {name}", flush=True)
            profile = cProfile.Profile(time.process_time)
            sends0 = counter.snapshot()[1]
            cpu0 = time.process_time()
            profile.enable()
            await run()
            profile.disable()
            cpu = time.process_time() - cpu0
            sends = counter.snapshot()[1] - sends0
            report[name] = _summary(profile, stamps, plain[name], cpu, sends)
            buffer = io.StringIO()
            stats = pstats.Stats(profile, stream=buffer).sort_stats("cumulative")
            stats.print_stats("xor_ack_dynamodb", 40)
            slug = name.replace(" ", "-")
            (out / f"profile-paths-{slug}.txt").write_text(
                f"# cProfile (CPU timer) of ours, {name}, {stamps} stamps: the package's "
                "functions\n" + short_path(buffer.getvalue())
            )
    text = markdown(report)
    (out / "profile-paths.md").write_text(text)
    (out / "profile-paths.json").write_text(json.dumps(report, indent=2) + "\n")
    return text


def _summary(
    profile: cProfile.Profile, stamps: int, plain: float, profiled: float, sends: int
) -> dict[str, Any]:
    table: StatsTable = vars(pstats.Stats(profile))["stats"]  # not in pstats' stubs
    by_category = attribute(table, path_category)
    total = sum(by_category.values())
    scale = plain / total if total else 0.0
    calls = {p: 0 for p in PATHS}
    package: list[dict[str, Any]] = []
    for func, (_, ncalls, tottime, cumtime, _) in table.items():
        if "xor_ack_dynamodb/" not in func[0]:
            continue
        category = path_category(func)
        if category in calls:
            calls[category] += ncalls
        package.append(
            {
                "function": f"{short_path(func[0])}:{func[1]}({func[2]})",
                "path": category,
                "calls_per_stamp": round(ncalls / stamps, 3),
                "self_us_per_stamp": round(1e6 * tottime / stamps, 1),
                "cumulative_us_per_stamp": round(1e6 * cumtime / stamps, 1),
            }
        )
    package.sort(key=lambda row: row["cumulative_us_per_stamp"], reverse=True)
    return {
        "stamps": stamps,
        "requests_per_stamp": round(sends / stamps, 4),
        "cpu_us_per_stamp": round(1e6 * plain / stamps, 1),
        "profiled_cpu_us_per_stamp": round(1e6 * profiled / stamps, 1),
        "categories_us_per_stamp": {
            k: round(1e6 * v * scale / stamps, 1) for k, v in by_category.items()
        },
        "path_calls": calls,
        "package_functions": package[:25],
    }


def markdown(report: dict[str, dict[str, Any]]) -> str:
    out = [
        "# Where our client's CPU goes, by path (`--profile-paths`)",
        "",
        "Each workload's measured phase (setup untimed) runs twice: plain, for the client's "
        "process CPU per stamp, then under cProfile with a CPU-time timer, whose split is "
        "scaled to the plain CPU (the profiler costs several times what it measures). "
        "Self time by path of the package and by library for the rest; a standard-library "
        "function's time counts for its caller. The function tables are as profiled "
        "(overhead included). A path with 0 calls "
        "was not reached by that workload (settling needs a transport error or a re-sent "
        "request, which none of these makes).",
    ]
    for name, r in report.items():
        total = sum(r["categories_us_per_stamp"].values()) or 1.0
        out += [
            "",
            f"## {name}: {r['stamps']} stamps, {r['requests_per_stamp']} requests/stamp, "
            f"{r['cpu_us_per_stamp']:.0f} µs CPU/stamp ({r['profiled_cpu_us_per_stamp']:.0f} "
            "under the profiler)",
            "",
            "| where | CPU µs/stamp | share | calls (paths of ours) |",
            "|---|---:|---:|---:|",
        ]
        cats = dict(r["categories_us_per_stamp"])
        for path in PATHS:
            cats.setdefault(path, 0.0)
        for cat, us in sorted(cats.items(), key=lambda kv: kv[1], reverse=True):
            calls = r["path_calls"].get(cat, "")
            out.append(f"| {cat} | {us:.0f} | {100 * us / total:.0f}% | {calls} |")
        out += [
            "",
            "| package function | path | calls/stamp | self µs (profiled) | cumulative µs |",
            "|---|---|---:|---:|---:|",
        ]
        out += [
            f"| `{f['function']}` | {f['path'].split(':')[1].split('(')[0].strip()} "
            f"| {f['calls_per_stamp']} | {f['self_us_per_stamp']} "
            f"| {f['cumulative_us_per_stamp']} |"
            for f in r["package_functions"][:12]
        ]
    return "\n".join(out) + "\n"
