"""The command line of ``benchmarks/bench_client.py``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import platform
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from xor_ack_dynamodb.local import NPM_PACKAGE, NPM_VERSION, LocalDynamoDB

from . import short_chains
from .cases import Result
from .common import POOL, RACE_RETRY
from .delay_proxy import DelayProxy
from .path_profile import profile_paths
from .plot import plot
from .proxy_check import check_proxy
from .regimes import compare, parse_regimes
from .request_costs import request_costs
from .runner import FULL, QUICK, Sizes
from .suite import bench

DESCRIPTION = "Client benchmark: the seed's algorithm against XorAckDynamoDB, side by side."
RESULTS = Path(__file__).resolve().parent.parent / "results"


def versions() -> dict[str, str]:
    names = ("botocore", "aiobotocore", "aioboto3", "aiohttp")
    return {n: metadata.version(n) for n in names}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=DESCRIPTION)
    p.add_argument("--quick", action="store_true", help="smaller run (about a minute)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where results go (default benchmarks/results, with --delay-ms N "
        "benchmarks/results/delay-Nms)",
    )
    p.add_argument(
        "--replot", action="store_true", help="redraw scaling.png from --out's client.json only"
    )
    p.add_argument(
        "--request-costs",
        action="store_true",
        help="only measure what each request shape costs DynamoDB Local and the client",
    )
    p.add_argument(
        "--lanes",
        type=int,
        default=8,
        help="--request-costs: keys written in parallel (1: one request at a time, latency)",
    )
    p.add_argument(
        "--delay-ms",
        type=float,
        default=0.0,
        help="send every request through a proxy process that adds this much per round trip "
        "(half each way); 0: straight to DynamoDB Local",
    )
    p.add_argument(
        "--regimes",
        help="run one writer, 8 tasks and the hot tag in each regime, side by side "
        "(e.g. direct,4ms): regimes.{md,json}",
    )
    p.add_argument(
        "--short-chains",
        action="store_true",
        help="only chains of create + 2 stamps, 8 at a time, on key-only tables, in the "
        "regimes of --regimes (default 4ms), 16 rounds of 64 chains unless --rounds/--chains: "
        "short-chains/runs/<time>.json and short-chains.md (every run there)",
    )
    p.add_argument(
        "--decompose",
        action="store_true",
        help="--short-chains with two references in the rounds: the seed's algorithm on ours' "
        "client config, and ours' requests sent from templates (no client logic)",
    )
    p.add_argument(
        "--plain-tables",
        action="store_true",
        help="--regimes on tables with the key alone (no inventory indexes, no stream)",
    )
    p.add_argument(
        "--same-config",
        action="store_true",
        help="--regimes with the seed on our client config too (the algorithms alone; "
        "default: the seed on the SDK's defaults, as its users pass it a client)",
    )
    p.add_argument(
        "--profile-paths",
        action="store_true",
        help="only profile our client by path (scheduler, settle, proof): profile-paths.*",
    )
    p.add_argument(
        "--check-proxy",
        action="store_true",
        help="only check the delay proxy: one GetItem at a time, direct and through it",
    )
    p.add_argument("--rounds", type=int, help="rounds of each uncontended case (smaller runs)")
    p.add_argument("--chains", type=int, help="chains per round of each uncontended case")
    p.add_argument("--hot-stamps", type=int, help="stamps on the hot chain (default 512)")
    return p


def sizes_of(args: argparse.Namespace) -> Sizes:
    sizes = QUICK if args.quick else FULL
    if args.rounds is not None:
        sizes = dataclasses.replace(sizes, rounds=args.rounds, scaling_rounds=args.rounds)
    if args.chains is not None:
        n = args.chains
        sizes = dataclasses.replace(
            sizes, uncontended_chains=n, parallel_chains=n, cold_chains=n, profile_chains=n
        )
    if args.hot_stamps is not None:
        sizes = dataclasses.replace(sizes, hot_stamps=args.hot_stamps)
    return sizes


def command_line(argv: Sequence[str]) -> str:
    """The command as run, paths inside the checkout relative to it (no machine paths)."""
    root = f"{Path(__file__).resolve().parents[2]}/"
    return " ".join(["python benchmarks/bench_client.py", *(a.replace(root, "") for a in argv)])


@contextlib.contextmanager
def endpoint(delay_ms: float) -> Iterator[str]:
    """DynamoDB Local's endpoint, or with a delay, the endpoint of a proxy in front of it."""
    with LocalDynamoDB(backend="dynamodb-local", full_jit=True) as server:
        if delay_ms <= 0:
            yield server.endpoint_url
            return
        with DelayProxy(server.endpoint_url, delay_ms) as proxy:
            yield proxy.endpoint_url


def replot(out: Path) -> None:
    saved = json.loads((out / "client.json").read_text())["scaling"]
    plot(
        {
            kind: {
                int(w): {n: Result.from_dict(r) for n, r in per.items()} for w, per in ws.items()
            }
            for kind, ws in saved.items()
        },
        out / "scaling.png",
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    out: Path = args.out or (
        RESULTS if args.delay_ms <= 0 else RESULTS / f"delay-{args.delay_ms:g}ms"
    )
    if args.replot:
        replot(out)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        os.environ.pop(name, None)
    meta: dict[str, Any] = {
        "command": command_line(argv),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        "server": f"DynamoDB Local (npm {NPM_PACKAGE}@{NPM_VERSION}) on 127.0.0.1, in memory",
        "versions": versions(),
        "quick": args.quick,
        "race_retry": asdict(RACE_RETRY),
        "max_pool_connections": POOL,
    }
    if args.delay_ms > 0 and not args.regimes:
        meta["delay_ms_per_round_trip"] = args.delay_ms
        meta["server"] += (
            f", through a delay proxy in its own process adding {args.delay_ms:g} ms per "
            "round trip (half each way)"
        )
    meta["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]
    started = time.monotonic()
    sizes = sizes_of(args)
    if args.check_proxy:
        with LocalDynamoDB(backend="dynamodb-local", full_jit=True) as server:
            print(json.dumps(check_proxy(server.endpoint_url, args.delay_ms or 4.0), indent=2))
        return 0
    if args.short_chains:
        out = args.out or RESULTS / "short-chains"
        out.mkdir(parents=True, exist_ok=True)
        with LocalDynamoDB(backend="dynamodb-local", full_jit=True) as server:
            meta["server"] += "; tables with the key alone (no indexes, no stream)"
            text = short_chains.run(
                server.endpoint_url,
                parse_regimes(args.regimes or "4ms"),
                rounds=args.rounds or 16,
                chains=args.chains or 64,
                out=out,
                meta=meta,
                same_config=args.same_config,
                references=args.decompose,
                warm_rounds=short_chains.WARM_ROUNDS
                if args.rounds is None
                else min(short_chains.WARM_ROUNDS, args.rounds),
            )
            print(asyncio.run(text))
        return 0
    if args.regimes:
        regimes = parse_regimes(args.regimes)
        with LocalDynamoDB(backend="dynamodb-local", full_jit=True) as server:
            if args.plain_tables:
                meta["server"] += "; tables with the key alone (no indexes, no stream)"
            report = compare(
                server.endpoint_url,
                regimes,
                sizes,
                out,
                meta,
                plain_tables=args.plain_tables,
                same_config=args.same_config,
            )
            print(asyncio.run(report))
        return 0
    with endpoint(args.delay_ms) as url:
        if args.request_costs:
            print(asyncio.run(request_costs(url, out, lanes=args.lanes)))
            return 0
        if args.profile_paths:
            text = profile_paths(
                url,
                out,
                chains=sizes.parallel_chains,
                hot_stamps=sizes.hot_stamps,
                k=sizes.children,
            )
            print(asyncio.run(text))
            return 0
        asyncio.run(bench(url, sizes, out, meta, started))
    print(f"done in {time.monotonic() - started:.0f} s; results in {out}", file=sys.stderr)
    return 0
