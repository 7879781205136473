"""``--short-chains``: a job with one child (create + 2 stamps), 8 chains at a time.

The shape of issue #29's last paragraph.  Each regime (``--regimes``, default ``4ms``)
gets a seed/ours pair on key-only tables (as the seed's algorithm had them), each on the
client its users have (``regimes.pairs``: ours as ``connect()`` makes it, the seed with
the SDK's defaults; ``--same-config`` gives the seed ours), all interleaved round by
round.  A round is ``--chains`` whole chains per implementation from 8 tasks, each task
running its chains one after the other: ``create(tag, root)``, the parent stamp
``root ^ child``, the child's stamp.  Everything is measured, create included
(``Case.whole``): chains/s (stamps/s is twice that), requests per chain (the seed's
algorithm needs 5: a put, then a read and a write per stamp; ours 3), this process's
CPU per chain and per request, DynamoDB Local's CPU per chain, and a chain's latency.
No ``ReturnConsumedCapacity`` here (``--regimes`` asks for it): only the counting hooks,
the same on both, are added to the clients.

Unmeasured rounds of the same work come first (``WARM_ROUNDS``): DynamoDB Local's CPU
per chain falls 3-4x over them as its JIT compiles.  Ratios are medians over back-to-back
rounds (chains/s, client CPU per chain), so a change of load on the shared machine lands
on both.  Each run writes ``runs/<UTC time>.json`` to ``--out`` with the load average
before and after and the commit it ran; ``short-chains.md`` is rebuilt from every run
there (the median and range over runs), so a goal is judged on repeated runs, not one.
After the measured rounds, each implementation's chains run once more under cProfile
(CPU timer) in the last regime: ``profile-<impl>.txt``, and the split by library and by
path of ours in the run's JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import hashlib
import io
import json
import os
import pstats
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import xor_ack_dynamodb

from . import cases
from .cases import Case, Result, make_plans
from .cpu_profile import StatsTable, attribute, short_path
from .delay_proxy import DelayProxy
from .impls import Impl
from .path_profile import path_category
from .regimes import Regime, pairs
from .report import fmt
from .runner import merge, run_case

WRITERS = 8
CHILDREN = 1
#: Unmeasured rounds first: DynamoDB Local's CPU per chain falls by 3-4x over the first
#: ~16 rounds of both algorithms (its JIT), and while it compiles it takes CPU from the
#: client on this 2-CPU machine.
WARM_ROUNDS = 16
#: Goals of issue #29 for this shape: ours/seed.
GOAL_THROUGHPUT = 1.6
GOAL_CPU = 0.6


def case(chains: int) -> Case:
    return Case("short-chains", chains, CHILDREN, WRITERS, whole=True)


def _commit() -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "xor_ack_dynamodb"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (client modified)" if dirty else "")


def _client_digest() -> str:
    """A digest of the client package that ran (its .py files), whatever the checkout says."""
    root = Path(xor_ack_dynamodb.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:10]


def _process_seconds(pid: int | None) -> float | None:
    """CPU seconds a process (the delay proxy) has used so far (Linux /proc); None if unknown."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_per_chain(r: Result) -> float:
    return 1e6 * (r.setup_cpu_seconds + r.cpu_seconds) / r.chains if r.chains else 0.0


def _figures(r: Result) -> dict[str, Any]:
    chains_per_s = r.chains / r.seconds if r.seconds else 0.0
    requests = r.http_sends / r.chains if r.chains else 0.0
    cpu = _cpu_per_chain(r)
    server = None if r.server_cpu_seconds is None else 1e6 * r.server_cpu_seconds / r.chains
    return {
        "chains_per_s": round(chains_per_s, 1),
        "stamps_per_s": round(r.stamps_per_s, 1),
        "requests_per_chain": round(requests, 3),
        "calls_per_chain": {k: round(v / r.chains, 3) for k, v in sorted(r.calls.items())},
        "client_cpu_us_per_chain": round(cpu, 1),
        "client_cpu_us_per_request": round(cpu / requests, 1) if requests else None,
        "client_kernel_share": round(r.system_cpu_seconds / r.cpu_seconds, 3)
        if r.cpu_seconds
        else None,
        "server_cpu_us_per_chain": None if server is None else round(server, 1),
        "chain_latency_ms_p50": round(r.latency_ms_p50, 2),
        "chain_latency_ms_p99": round(r.latency_ms_p99, 2),
        "exact": r.exact,
        "errors": r.errors,
    }


def _paired(seed: Sequence[Result], ours: Sequence[Result], figure: Any) -> dict[str, float]:
    ratios = [figure(o) / figure(s) for s, o in zip(seed, ours, strict=True) if figure(s)]
    return {
        "median": round(statistics.median(ratios), 3),
        "min": round(min(ratios), 3),
        "max": round(max(ratios), 3),
    }


def _chains_per_s(r: Result) -> float:
    return r.chains / r.seconds if r.seconds else 0.0


async def _profile(impl: Impl, chains: int, out: Path) -> dict[str, Any]:
    """``chains`` whole chains of ``impl`` under cProfile (CPU timer): µs per chain by where."""
    c = case(chains)

    async def work(profile: cProfile.Profile | None) -> tuple[float, int]:
        plans = make_plans(c)
        sends0 = impl.counter.snapshot()[1]

        async def lane(own: Sequence[Any]) -> None:
            for plan in own:
                await impl.create(plan.tag, plan.root)
                for value in (plan.parent, *plan.children):
                    await impl.stamp(plan.tag, value)

        cpu0 = time.process_time()
        if profile is not None:
            profile.enable()
        await asyncio.gather(*(lane(plans[w::WRITERS]) for w in range(WRITERS)))
        if profile is not None:
            profile.disable()
        return time.process_time() - cpu0, impl.counter.snapshot()[1] - sends0

    plain, sends = await work(None)
    profile = cProfile.Profile(time.process_time)
    profiled, _ = await work(profile)
    slug = impl.name.split()[0]
    buffer = io.StringIO()
    pstats.Stats(profile, stream=buffer).sort_stats("tottime").print_stats(45)
    (out / f"profile-{slug}.txt").write_text(
        f"# cProfile (CPU timer) of {impl.name}, {chains} short chains (create + 2 stamps), "
        f"{WRITERS} at a time, by self time\n" + short_path(buffer.getvalue())
    )
    table: StatsTable = vars(pstats.Stats(profile))["stats"]  # not in pstats' stubs
    by_category = attribute(table, path_category)
    total = sum(by_category.values())
    scale = plain / total if total else 0.0
    return {
        "impl": impl.name,
        "chains": chains,
        "requests_per_chain": round(sends / chains, 3),
        "cpu_us_per_chain": round(1e6 * plain / chains, 1),
        "profiled_cpu_us_per_chain": round(1e6 * profiled / chains, 1),
        "categories_us_per_chain": {
            k: round(1e6 * v * scale / chains, 1) for k, v in by_category.items()
        },
    }


async def run(
    endpoint: str,
    regimes: Sequence[Regime],
    *,
    rounds: int,
    chains: int,
    out: Path,
    meta: dict[str, Any],
    same_config: bool = False,
    references: bool = False,
    profile_chains: int = 64,
    warm_rounds: int = WARM_ROUNDS,
) -> str:
    """Measure the shape in every regime, interleaved; write this run's JSON and the summary.

    ``references`` (``--decompose``): two more implementations in the rounds, to say what
    the CPU is made of: the seed's algorithm on ours' client config, and ours' three
    requests sent from templates with no client logic (``TemplateImpl``).
    """
    if cases.watch_server().pid is None:
        print("DynamoDB Local's pid not found in /proc: no server CPU figures", flush=True)
    meta["seed_client"] = "ours (--same-config)" if same_config else "SDK defaults"
    meta["commit"] = _commit()
    meta["client_digest"] = _client_digest()
    meta["tables"] = "key only (plain)"
    meta["shape"] = f"create + {CHILDREN + 1} stamps per chain, {WRITERS} chains at a time"
    meta["references"] = references
    meta["warm_rounds"] = warm_rounds
    per: dict[str, list[Result]] = {}
    proxy_seconds: dict[str, list[float]] = {}  # the delay proxy's CPU, per round
    proxies: dict[str, DelayProxy] = {}
    profiles: list[dict[str, Any]] = []
    async with contextlib.AsyncExitStack() as stack:
        impls = await pairs(
            stack,
            endpoint,
            regimes,
            plain_tables=True,
            same_config=same_config,
            capacity=False,
            references=references,
            proxies=proxies,
        )
        every = [impl for pair in impls.values() for impl in pair]
        per = {impl.name: [] for impl in every}
        proxy_seconds = {impl.name: [] for impl in every}
        proxy_of = {
            impl.name: proxies[regime].pid
            for regime, pair in impls.items()
            for impl in pair
            if regime in proxies
        }
        print(f"warm-up: {warm_rounds} rounds (DynamoDB Local's JIT, the pools)", flush=True)
        for r in range(warm_rounds):
            for impl in every if r % 2 == 0 else list(reversed(every)):
                await run_case(impl, case(chains))
        for r in range(rounds):
            for impl in every if r % 2 == 0 else list(reversed(every)):
                proxy0 = _process_seconds(proxy_of.get(impl.name))
                per[impl.name].append(await run_case(impl, case(chains)))
                proxy1 = _process_seconds(proxy_of.get(impl.name))
                if proxy0 is not None and proxy1 is not None:
                    proxy_seconds[impl.name].append(proxy1 - proxy0)
            line = "  ".join(
                f"{name}: {_chains_per_s(results[-1]):6.1f} chains/s "
                f"{_cpu_per_chain(results[-1]):6.0f} µs/chain"
                f" (server {1e6 * (results[-1].server_cpu_seconds or 0) / results[-1].chains:5.0f})"
                for name, results in per.items()
            )
            print(f"  round {r + 1:>2}/{rounds}  {line}", flush=True)
        for impl in impls[regimes[-1].name][:2]:  # seed and ours
            print(f"  profiling {impl.name}", flush=True)
            profiles.append(await _profile(impl, profile_chains, out))
    meta["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    results: dict[str, Any] = {}
    proxy_cpu: dict[str, float] = {}
    for regime in regimes:
        seed, ours = per[f"seed {regime.name}"], per[f"ours {regime.name}"]
        references_of = {
            name.split()[0]: _figures(merge(rs))
            for name, rs in per.items()
            if name.endswith(f" {regime.name}") and name.split()[0] not in ("seed", "ours")
        }
        for name in (f"seed {regime.name}", f"ours {regime.name}"):
            spent = proxy_seconds.get(name) or []
            if len(spent) == len(per[name]):
                proxy_cpu[name] = round(1e6 * sum(spent) / sum(x.chains for x in per[name]), 1)
        results[regime.name] = {
            "seed": {
                **_figures(merge(seed)),
                "proxy_cpu_us_per_chain": proxy_cpu.get(f"seed {regime.name}"),
            },
            "ours": {
                **_figures(merge(ours)),
                "proxy_cpu_us_per_chain": proxy_cpu.get(f"ours {regime.name}"),
            },
            "references": references_of,
            "ratio_chains_per_s": _paired(seed, ours, _chains_per_s),
            "ratio_client_cpu_per_chain": _paired(seed, ours, _cpu_per_chain),
            "rounds": {
                "seed_chains_per_s": [round(_chains_per_s(x), 1) for x in seed],
                "ours_chains_per_s": [round(_chains_per_s(x), 1) for x in ours],
                "seed_cpu_us_per_chain": [round(_cpu_per_chain(x)) for x in seed],
                "ours_cpu_us_per_chain": [round(_cpu_per_chain(x)) for x in ours],
            },
        }
    payload = {
        "meta": {**meta, "rounds": rounds, "chains_per_round": chains},
        "regimes": [r.name for r in regimes],
        "results": results,
        "profiles": profiles,
    }
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (runs / f"{stamp}.json").write_text(json.dumps(payload, indent=2) + "\n")
    text = summary(out)
    (out / "short-chains.md").write_text(text)
    return text


def _range(values: Sequence[float], digits: str = ".2f", suffix: str = "x") -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:{digits}}{suffix}"
    return f"{med:{digits}}{suffix} ({min(values):{digits}}-{max(values):{digits}})"


def _machine(regime: str, runs: Sequence[dict[str, Any]]) -> list[str]:
    """Per run: the CPU one chain costs the machine (client, DynamoDB Local, delay proxy)."""
    rows = []
    for run in runs:
        res = run["results"][regime]
        totals = []
        cells = []
        for side in ("seed", "ours"):
            f = res[side]
            parts = (
                f["client_cpu_us_per_chain"],
                f.get("server_cpu_us_per_chain"),
                f.get("proxy_cpu_us_per_chain"),
            )
            if any(p is None for p in parts):
                break
            totals.append(sum(p for p in parts if p is not None))
            cells.append(" / ".join(fmt(p) for p in parts if p is not None))
        if len(totals) < 2:
            continue
        rows.append(
            f"| {run['meta']['date']} | {cells[0]} | {cells[1]} "
            f"| {totals[1] / totals[0]:.2f}x | {res['ratio_chains_per_s']['median']:.2f}x |"
        )
    if not rows:
        return []
    return [
        "",
        "What a chain costs the machine's 2 CPUs, which the client, DynamoDB Local and the "
        "delay proxy share (and other jobs):",
        "",
        "| run (UTC) | seed µs/chain: client / DynamoDB Local / proxy "
        "| ours: client / DynamoDB Local / proxy | ours/seed, all three | ours/seed chains/s |",
        "|---|---|---|---:|---:|",
        *rows,
    ]


def _decomposition(regime: str, runs: Sequence[dict[str, Any]]) -> list[str]:
    """Per run with references: client CPU per request of each, and what ours' is made of."""
    rows = []
    for run in runs:
        res = run["results"][regime]
        refs = res.get("references") or {}
        if "seed-ourscfg" not in refs or "floor" not in refs:
            continue
        seed, ours = res["seed"], res["ours"]
        same, floor = refs["seed-ourscfg"], refs["floor"]
        seed_chain = seed["client_cpu_us_per_chain"]
        rows.append(
            f"| {run['meta']['date']} | {fmt(seed['client_cpu_us_per_request'])} "
            f"| {fmt(same['client_cpu_us_per_request'])} "
            f"| {fmt(floor['client_cpu_us_per_request'])} "
            f"| {fmt(ours['client_cpu_us_per_request'])} "
            f"| {fmt(seed_chain)} / {fmt(same['client_cpu_us_per_chain'])} / "
            f"{fmt(floor['client_cpu_us_per_chain'])} / {fmt(ours['client_cpu_us_per_chain'])} "
            f"| {floor['client_cpu_us_per_chain'] / seed_chain:.2f}x "
            f"| {ours['client_cpu_us_per_chain'] - floor['client_cpu_us_per_chain']:,.0f} |"
        )
    if not rows:
        return []
    return [
        "",
        "What the client CPU is made of (`--decompose`: two references in the same rounds, "
        "on ours' client config: the seed's algorithm, and ours' three requests sent from "
        "templates with no client logic at all, the floor for these requests):",
        "",
        "| run (UTC) | µs/request: seed | seed on ours' config | floor (ours' requests) "
        "| ours | µs/chain: seed / seed on ours' config / floor / ours | floor/seed "
        "| ours above the floor, µs/chain |",
        "|---|---:|---:|---:|---:|---|---:|---:|",
        *rows,
    ]


def _share(figures: dict[str, Any]) -> str:
    share = figures.get("client_kernel_share")
    return "-" if share is None else f"{100 * share:.0f}%"


def summary(out: Path) -> str:
    """``short-chains.md`` from every run in ``out/runs``: per run, then median over runs."""
    runs = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]
    regimes = sorted({name for run in runs for name in run["regimes"]})
    lines = [
        "# Short chains: a job with one child, 8 at a time",
        "",
        "`python benchmarks/bench_client.py --short-chains` (`benchmarks/client/short_chains.py`): "
        f"chains of create + {CHILDREN + 1} stamps (the parent stamp `root ^ child`, then the "
        f"child's), {WRITERS} chains at a time, each task running its chains one after the "
        "other, the whole chain measured; key-only tables; the seed's algorithm "
        "(`benchmarks/seed_baseline.py`: a put, then a consistent read and a conditional "
        "write per stamp) on a client with the SDK's defaults, ours as `connect()` makes it; "
        "the two interleaved round by round, against DynamoDB Local on 127.0.0.1, through "
        "`delay_proxy.py` for a delay regime, after unmeasured warm-up rounds of the same work "
        "(DynamoDB Local's JIT). Ratios per run: the median over back-to-back "
        "rounds (the range of the rounds' ratios in brackets). Goals (issue #29): chains/s "
        f">= {GOAL_THROUGHPUT}x the seed's, client CPU per chain <= {GOAL_CPU}x.",
    ]
    for regime in regimes:
        mine = [run for run in runs if regime in run["results"]]
        lines += [
            "",
            f"## {regime}: {len(mine)} runs",
            "",
            "| run (UTC) | commit / client digest | load before / after | rounds x chains "
            "| seed chains/s | ours chains/s | ours/seed chains/s | requests per chain seed / ours "
            "| client CPU µs/chain seed / ours | ours/seed CPU | per request seed / ours "
            "| kernel share seed / ours | DynamoDB Local CPU µs/chain seed / ours "
            "| chain p50 ms seed / ours | exact |",
            "|---|---|---|---|---:|---:|---:|---|---|---:|---|---|---|---|---|",
        ]
        tput: list[float] = []
        cpu: list[float] = []
        for run in mine:
            m, res = run["meta"], run["results"][regime]
            s, o = res["seed"], res["ours"]
            t, c = res["ratio_chains_per_s"], res["ratio_client_cpu_per_chain"]
            tput.append(t["median"])
            cpu.append(c["median"])
            server = (
                "-"
                if s["server_cpu_us_per_chain"] is None
                else f"{fmt(s['server_cpu_us_per_chain'])} / {fmt(o['server_cpu_us_per_chain'])}"
            )
            lines.append(
                f"| {m['date']} | {m['commit']} / {m.get('client_digest', '-')} "
                f"| {m['loadavg_before'][0]} / "
                f"{m['loadavg_after'][0]} | {m['rounds']} x {m['chains_per_round']} "
                f"| {fmt(s['chains_per_s'])} | {fmt(o['chains_per_s'])} "
                f"| {t['median']:.2f}x ({t['min']:.2f}-{t['max']:.2f}) "
                f"| {s['requests_per_chain']:.2f} / {o['requests_per_chain']:.2f} "
                f"| {fmt(s['client_cpu_us_per_chain'])} / {fmt(o['client_cpu_us_per_chain'])} "
                f"| {c['median']:.2f}x ({c['min']:.2f}-{c['max']:.2f}) "
                f"| {fmt(s['client_cpu_us_per_request'])} / "
                f"{fmt(o['client_cpu_us_per_request'])} "
                f"| {_share(s)} / {_share(o)} | {server} "
                f"| {s['chain_latency_ms_p50']:.1f} / {o['chain_latency_ms_p50']:.1f} "
                f"| {'yes' if s['exact'] and o['exact'] else 'NO'} |"
            )
        lines += _machine(regime, mine)
        lines += _decomposition(regime, mine)
        if tput:
            met_t = sum(x >= GOAL_THROUGHPUT for x in tput)
            met_c = sum(x <= GOAL_CPU for x in cpu)
            lines += [
                "",
                f"Over the {len(mine)} runs (median, range of the runs' medians): chains/s "
                f"{_range(tput)} of the seed's (goal >= {GOAL_THROUGHPUT}x: met in {met_t} of "
                f"{len(tput)} runs); client CPU per chain {_range(cpu)} of the seed's (goal <= "
                f"{GOAL_CPU}x: met in {met_c} of {len(cpu)} runs).",
            ]
    return "\n".join(lines) + "\n"
