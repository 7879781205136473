"""The command line of ``benchmarks/bench_client.py``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from xor_ack_dynamodb.local import NPM_PACKAGE, NPM_VERSION, LocalDynamoDB

from .cases import Result
from .common import POOL, RACE_RETRY
from .plot import plot
from .request_costs import request_costs
from .runner import FULL, QUICK
from .suite import bench

DESCRIPTION = "Client benchmark: the seed's algorithm against XorAckDynamoDB, side by side."
RESULTS = Path(__file__).resolve().parent.parent / "results"


def versions() -> dict[str, str]:
    names = ("botocore", "aiobotocore", "aioboto3", "aiohttp")
    return {n: metadata.version(n) for n in names}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=DESCRIPTION)
    p.add_argument("--quick", action="store_true", help="smaller run (about a minute)")
    p.add_argument("--out", type=Path, default=RESULTS)
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
    return p


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
    args = parser().parse_args(argv)
    out: Path = args.out
    if args.replot:
        replot(out)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        os.environ.pop(name, None)
    command = "python benchmarks/bench_client.py" + (" --quick" if args.quick else "")
    meta = {
        "command": command,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        "server": f"DynamoDB Local (npm {NPM_PACKAGE}@{NPM_VERSION}) on 127.0.0.1, in memory",
        "versions": versions(),
        "quick": args.quick,
        "race_retry": asdict(RACE_RETRY),
        "max_pool_connections": POOL,
    }
    meta["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]
    started = time.monotonic()
    if args.request_costs:
        with LocalDynamoDB(backend="dynamodb-local") as server:
            print(asyncio.run(request_costs(server.endpoint_url, out, lanes=args.lanes)))
        return 0
    with LocalDynamoDB(backend="dynamodb-local") as server:
        sizes = QUICK if args.quick else FULL
        asyncio.run(bench(server.endpoint_url, sizes, out, meta, started))
    print(f"done in {time.monotonic() - started:.0f} s; results in {out}", file=sys.stderr)
    return 0
