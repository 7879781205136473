"""Where the client CPU goes: cProfile (CPU timer) of a case, grouped by library."""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import pstats
import re
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from xor_ack_dynamodb import Stamp

from .cases import Case, deal, make_plans, setup
from .impls import Impl

#: (category, substrings of a profiled function's "file:function"), first match wins.
#: Standard-library and builtin functions (json, hmac, str.join, socket.send, ...) match
#: none: their CPU counts for the library that called them.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("our core (xor_ack_dynamodb)", ("xor_ack_dynamodb/",)),
    ("benchmark harness, seed port", ("benchmarks/", "seed_baseline")),
    ("botocore: user-agent header (rebuilt per request)", ("botocore/useragent",)),
    ("botocore: request serialization + validation", ("botocore/serialize", "botocore/validate")),
    ("botocore: response parsing", ("botocore/parsers",)),
    ("botocore: SigV4 signing", ("botocore/auth", "botocore/signers", "credentials")),
    ("botocore: endpoint, event hooks, retry handlers, client plumbing", ("botocore/",)),
    ("aiohttp (HTTP client), yarl, multidict", ("aiohttp/", "yarl/", "multidict/")),
)
EVENT_LOOP = "asyncio event loop: select, scheduling, transports"
OTHER = "other (stdlib)"
#: Where the event loop dispatches: CPU that reaches one of these before a library
#: function is the loop's own.
_DISPATCH = (
    "base_events.py:_run_once",
    "base_events.py:run_forever",
    "events.py:_run",
    "<method 'run' of '_contextvars.Context' objects>",
)

Func: TypeAlias = tuple[str, int, str]
#: pstats' table: function -> (primitive calls, calls, self time, cumulative time, callers)
StatsTable: TypeAlias = dict[Func, tuple[int, int, float, float, dict[Func, Any]]]


def _label(func: Func) -> str:
    filename, _, name = func
    return f"{filename}:{name}"


def direct_category(func: Func) -> str | None:
    where = _label(func)
    if any(d in where for d in _DISPATCH):
        return EVENT_LOOP
    for category, needles in CATEGORIES:
        if any(n in where for n in needles):
            return category
    return None


def attribute(
    table: StatsTable, classify: Callable[[Func], str | None] | None = None
) -> dict[str, float]:
    """Self CPU time by category; a stdlib function's share goes up to its callers.

    A function in no category hands its self time to its callers, in proportion to the
    time it spent on behalf of each (pstats keeps that per caller), until a library or
    event-loop function is reached.
    """
    memo: dict[Func, dict[str, float]] = {}

    def shares(func: Func, seen: frozenset[Func]) -> dict[str, float]:
        if func in memo:
            return memo[func]
        category = (classify or direct_category)(func)
        if category is not None:
            return {category: 1.0}
        callers = table.get(func, (0, 0, 0.0, 0.0, {}))[4]
        weights = {c: float(v[2]) for c, v in callers.items() if c not in seen}
        total = sum(weights.values())
        if not total:
            result = {EVENT_LOOP if "asyncio/" in func[0] else OTHER: 1.0}
        else:
            result = {}
            for caller, weight in weights.items():
                for cat, share in shares(caller, seen | {func}).items():
                    result[cat] = result.get(cat, 0.0) + share * weight / total
        memo[func] = result
        return result

    out: dict[str, float] = {}
    for func, (_, _, tottime, _, _) in table.items():
        for category, share in shares(func, frozenset({func})).items():
            out[category] = out.get(category, 0.0) + tottime * share
    return dict(sorted(out.items(), key=lambda kv: kv[1], reverse=True))


#: Prefixes stripped from profiled file names: the results name no machine's paths.
_PREFIXES = (
    str(Path(__file__).resolve().parents[2]) + os.sep,
    sysconfig.get_paths()["stdlib"] + os.sep,
)
_SITE_PACKAGES = re.compile(r"[^\s(]*?site-packages/")


def short_path(where: str) -> str:
    """``where`` without the checkout's, the interpreter's and site-packages' directories."""
    where = _SITE_PACKAGES.sub("", where)
    for prefix in _PREFIXES:
        where = where.replace(prefix, "")
    return where


@dataclass
class ProfileSummary:
    """Where one implementation's client CPU goes, per stamp."""

    impl: str
    stamps: int
    cpu_us_per_stamp: float  # process CPU of the same work without the profiler
    kernel_share: float  # of that, the share spent in the kernel (sockets, wake-ups)
    profiled_us_per_stamp: float  # CPU under the profiler (its overhead included)
    categories: dict[str, float]  # µs per stamp, scaled to cpu_us_per_stamp
    top: list[dict[str, Any]]  # functions by cumulative CPU, µs per stamp (profiled)


#: Functions on every path (the loop, the harness, the coroutine plumbing): no information.
_TRIVIAL = ("asyncio/", "benchmarks/", "<module>", "_contextvars", "_helpers.py")


async def profile_case(impl: Impl, case: Case, out: Path) -> ProfileSummary:
    """CPU of the measured phase of ``case``, once plain and once under cProfile.

    cProfile runs with a CPU-time timer, so time spent waiting for DynamoDB Local
    costs nothing.  Its per-call overhead inflates the total (and call-heavy code a
    little more than the rest), so the categories are scaled to the plain run's CPU.
    A sampling profiler (py-spy) was tried and not kept: on this 2-CPU machine it
    counts the client as busy in ``socket.send`` while it is only preempted by the
    server it just woke (the kernel's share of the client CPU is measured here).
    """

    async def work(profile: cProfile.Profile | None) -> tuple[float, float, int]:
        plans = make_plans(case)
        await setup(impl, plans)
        lanes = deal(plans, case.writers)

        async def lane(jobs: list[tuple[str, Stamp]]) -> None:
            for tag, value in jobs:
                await impl.stamp(tag, value)

        t0 = os.times()
        if profile is not None:
            profile.enable()
        await asyncio.gather(*(lane(jobs) for jobs in lanes))
        if profile is not None:
            profile.disable()
        t1 = os.times()
        return t1.user - t0.user, t1.system - t0.system, case.chains * case.children

    user, system, stamps = await work(None)
    profile = cProfile.Profile(time.process_time)
    p_user, p_system, _ = await work(profile)
    slug = impl.name.split()[0]
    buffer = io.StringIO()
    pstats.Stats(profile, stream=buffer).sort_stats("cumulative").print_stats(60)
    (out / f"profile-{slug}.txt").write_text(
        f"# cProfile (CPU timer) of {impl.name}, {case.scenario}, {stamps} stamps\n"
        + short_path(buffer.getvalue())
    )
    table: StatsTable = vars(pstats.Stats(profile))["stats"]  # not in pstats' stubs
    by_category = attribute(table)
    profiled = sum(by_category.values())
    cpu_us = 1e6 * (user + system) / stamps
    scale = cpu_us / (1e6 * profiled / stamps) if profiled else 0.0
    top = sorted(table.items(), key=lambda kv: kv[1][3], reverse=True)
    rows: list[dict[str, Any]] = []
    for func, (_, ncalls, tottime, cumtime, _) in top:
        if any(t in _label(func) for t in _TRIVIAL):
            continue
        rows.append(
            {
                "function": f"{short_path(func[0])}:{func[1]}({func[2]})",
                "calls_per_stamp": round(ncalls / stamps, 2),
                "cumulative_us_per_stamp": round(1e6 * cumtime / stamps),
                "self_us_per_stamp": round(1e6 * tottime / stamps),
            }
        )
        if len(rows) == 20:
            break
    return ProfileSummary(
        impl=impl.name,
        stamps=stamps,
        cpu_us_per_stamp=round(cpu_us, 1),
        kernel_share=round(system / (user + system), 3) if user + system else 0.0,
        profiled_us_per_stamp=round(1e6 * (p_user + p_system) / stamps, 1),
        categories={k: round(1e6 * v / stamps * scale, 1) for k, v in by_category.items()},
        top=rows,
    )
