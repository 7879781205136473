"""How fast the dashboard answers with 100,000 open chains in the table (docs/dashboard.md).

    python benchmarks/bench_dashboard.py                    # 100,000 open chains
    python benchmarks/bench_dashboard.py --open 20000 --out /tmp/dash.md

On a DynamoDB Local of its own (in memory, 127.0.0.1): a table made by ``TableSpec``,
``--open`` chains created with a deadline an hour away (``create_many``, 100 per
transaction), ``--failed`` chains failed and ``--overdue`` chains left past a short
deadline.  Then ``xor-ack dashboard`` runs in a process of its own, as a user starts it,
and this script asks it, with its token, one request at a time:

- the overview (``GET /``), ``--requests`` times while the dashboard is still reading
  the stream's records (the creates: 24 hours of them), and as many once it has caught
  up; the first count of the indexes, and how long a count takes (the page says);
- the open list: its first page, and ``--pages`` pages after it through the cursor;
  a page filtered by a tag prefix; a chain's page;
- the dashboard process's resident memory at the end.

Goal (issue 28): the overview answers within 1 s.  The numbers go to ``--out``
(Markdown, default ``benchmarks/results/dashboard.md``) and beside it as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import boto3

from xor_ack_dynamodb import SyncXorAckDynamoDB, XorAckDynamoDB, new_stamp
from xor_ack_dynamodb.local import DYNAMODB_LOCAL_VERSION, LocalDynamoDB
from xor_ack_dynamodb.table import TableSpec, create_table

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-dashboard-token-0123456789"
for _name, _value in {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}.items():
    os.environ.setdefault(_name, _value)


async def populate(endpoint: str, table: str, count: int, batch: int = 2000) -> float:
    started = time.monotonic()
    async with XorAckDynamoDB.connect(table=table, endpoint_url=endpoint) as ack:
        for start in range(0, count, batch):
            chains = {
                f"load/{i:07d}": new_stamp(8) for i in range(start, min(count, start + batch))
            }
            await ack.create_many(chains, timeout=3600, concurrency=8)
            if start and start % 20_000 == 0:
                print(f"  {start:,} created", file=sys.stderr)
    return time.monotonic() - started


def get(url: str) -> tuple[float, int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:
        body = answer.read().decode()
        return time.perf_counter() - started, answer.status, body


def summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "n": len(ordered),
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p90_ms": round(1000 * ordered[max(0, int(0.9 * len(ordered)) - 1)], 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def rss_mb(pid: int) -> float | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"VmRSS:\s+(\d+) kB", text)
    return None if found is None else round(int(found.group(1)) / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--open", type=int, default=100_000, help="open chains (default 100,000)")
    parser.add_argument("--failed", type=int, default=1000)
    parser.add_argument("--overdue", type=int, default=500)
    parser.add_argument("--requests", type=int, default=30, help="overview requests per phase")
    parser.add_argument("--pages", type=int, default=20, help="list pages after the first")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/dashboard.md")
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "dynamodb_local": DYNAMODB_LOCAL_VERSION,
        "open": args.open,
        "failed": args.failed,
        "overdue": args.overdue,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": round(os.getloadavg()[0], 2),
    }
    with LocalDynamoDB(backend="dynamodb-local", full_jit=True) as db:
        spec = TableSpec(name="bench-dashboard")
        create_table(boto3.client("dynamodb", endpoint_url=db.endpoint_url), spec)
        print(f"creating {args.open:,} open chains...", file=sys.stderr)
        results["populate_s"] = round(
            asyncio.run(populate(db.endpoint_url, spec.name, args.open)), 1
        )
        with SyncXorAckDynamoDB.connect(table=spec.name, endpoint_url=db.endpoint_url) as ack:
            for i in range(args.failed):
                ack.create(f"broken/{i:05d}", new_stamp(8))
                ack.fail(f"broken/{i:05d}", "input lost" if i % 2 else "schema changed")
            for i in range(args.overdue):
                ack.create(f"late/{i:05d}", new_stamp(8), timeout=1)
        time.sleep(1.2)
        expected = {
            "open": args.open + args.overdue,
            "overdue": args.overdue,
            "failed": args.failed,
        }
        results.update(measure(db.endpoint_url, spec.name, args, expected))
    results["load_after"] = round(os.getloadavg()[0], 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    args.out.write_text(report(results))
    print(report(results))


def _count(html: str, status: str) -> int | None:
    found = re.search(rf'id="count-{status}">.*?data-count="(\d*)"', html, re.S)
    return int(found.group(1)) if found and found.group(1) else None


def measure(endpoint: str, table: str, args: Any, expected: dict[str, int]) -> dict[str, Any]:
    command = [
        sys.executable, "-c", "from xor_ack_dynamodb.cli import main; main()",
        "--endpoint-url", endpoint, "--table", table, "dashboard", "--port", "0",
    ]  # fmt: skip
    env = {**os.environ, "XOR_ACK_DASHBOARD_TOKEN": TOKEN}
    started = time.monotonic()
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    out: dict[str, Any] = {}
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip().split("?")[0]
        during: list[float] = []
        counted_at = caught_up_at = None
        counts: dict[str, int | None] = {}
        while caught_up_at is None or counted_at is None or len(during) < args.requests:
            took, status, html = get(base)
            assert status == 200
            if caught_up_at is None:
                during.append(took)
                if "Stream: following" in html:
                    caught_up_at = time.monotonic() - started
            counts = {s: _count(html, s) for s in expected}
            if counted_at is None and counts == expected:
                counted_at = time.monotonic() - started
            time.sleep(0.2)
        took_text = re.search(r"counted .*? ago in ([^<,]+)", html)
        after = [get(base)[0] for _ in range(args.requests)]
        out["overview_while_reading_stream"] = summary(during)
        out["overview_after"] = summary(after)
        out["first_exact_count_s"] = round(counted_at, 1)
        out["stream_caught_up_s"] = round(caught_up_at, 1)
        out["count_took"] = took_text.group(1).strip() if took_text else None
        out["counts"] = counts
        first, status, html = get(base + "chains?status=open")
        pages = [first]
        cursor = re.search(r'class="next" href="([^"]*)"', html)
        listed = len(re.findall(r"<tr data-tag=", html))
        for _ in range(args.pages):
            assert cursor is not None
            took, _, html = get(base.rstrip("/") + cursor.group(1).replace("&amp;", "&"))
            pages.append(took)
            listed += len(re.findall(r"<tr data-tag=", html))
            cursor = re.search(r'class="next" href="([^"]*)"', html)
        out["list_pages"] = summary(pages)
        out["list_rows"] = listed
        out["list_prefix_page_ms"] = round(
            1000 * get(base + "chains?status=open&prefix=load/00042")[0], 1
        )
        out["list_failed_reason_page_ms"] = round(
            1000 * get(base + "chains?status=failed&reason=input+lost")[0], 1
        )
        tag = f"load%2F{min(12345, args.open - 1):07d}"
        out["chain_page_ms"] = round(1000 * get(base + "chain?tag=" + tag)[0], 1)
        out["dashboard_rss_mb"] = rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return out


def report(r: dict[str, Any]) -> str:
    def row(name: str, s: dict[str, float]) -> str:
        return f"| {name} | {s['n']} | {s['p50_ms']} ms | {s['p90_ms']} ms | {s['max_ms']} ms |"

    pages = r["list_pages"]["n"] - 1
    return "\n".join(
        [
            f"# Dashboard with {r['open']:,} open chains ({r['date']})",
            "",
            f"`python benchmarks/bench_dashboard.py` on {r['machine']}, DynamoDB Local "
            f"{r['dynamodb_local']} in memory; {r['open']:,} open chains (deadline in an "
            f"hour), {r['overdue']:,} overdue, {r['failed']:,} failed; created in "
            f"{r['populate_s']} s. The dashboard: `xor-ack dashboard` in its own process, "
            "asked one request at a time.",
            "",
            "| request | n | p50 | p90 | max |",
            "| --- | ---: | ---: | ---: | ---: |",
            row("overview, while reading the stream", r["overview_while_reading_stream"]),
            row("overview, stream caught up", r["overview_after"]),
            row(f"open list: first page, then {pages} by cursor", r["list_pages"]),
            "",
            f"- Counts exact on the overview {r['first_exact_count_s']} s after start "
            f"({r['counts']}); one count of the three lists took {r['count_took']}.",
            f"- The stream's records read (caught up) {r['stream_caught_up_s']} s after start.",
            f"- {r['list_rows']:,} rows over the list pages; a page filtered by a tag prefix "
            f"{r['list_prefix_page_ms']} ms, the failed list by reason "
            f"{r['list_failed_reason_page_ms']} ms, a chain's page {r['chain_page_ms']} ms.",
            f"- Dashboard process memory at the end: {r['dashboard_rss_mb']} MB resident.",
            f"- The machine's load (1-minute average) was {r['load_before']} before the run and "
            f"{r['load_after']} after it (other work shares its {os.cpu_count()} cores).",
            "",
        ]
    )


if __name__ == "__main__":
    main()
