"""The report: the goal table and ``client.md``."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .cases import Result
from .common import STAMP_BYTES
from .cpu_profile import ProfileSummary


def fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if value < 1 else f"{value:.2f}"


@dataclass
class Row:
    metric: str
    seed: str
    ours: str
    ratio: str
    goal: str
    met: str


def ratio_row(
    metric: str,
    seed: float | None,
    ours: float | None,
    goal: str = "",
    met: bool | None = None,
    ratio: float | None = None,
) -> Row:
    if seed is None or ours is None:
        return Row(metric, "-", "-", "-", goal, "")
    if ratio is None and seed:
        ratio = ours / seed
    verdict = "" if met is None else ("yes" if met else "**no**")
    return Row(
        metric, fmt(seed), fmt(ours), "-" if ratio is None else f"{ratio:.2f}x", goal, verdict
    )


def paired_ratio(seed: Result, ours: Result) -> float | None:
    """Median of ours/seed over rounds run back to back (drift on the machine cancels out).

    None unless both ran the same number (> 1) of rounds.
    """
    s_rounds, o_rounds = seed.round_stamps_per_s, ours.round_stamps_per_s
    if len(s_rounds) != len(o_rounds) or len(s_rounds) < 2:
        return None
    return statistics.median(o / s for s, o in zip(s_rounds, o_rounds, strict=True) if s)


def throughput_row(metric: str, seed: Result, ours: Result, goal: float | None = None) -> Row:
    ratio = paired_ratio(seed, ours)
    if ratio is not None:
        metric += f" ({len(seed.round_stamps_per_s)} paired rounds)"
    else:
        ratio = ours.stamps_per_s / seed.stamps_per_s if seed.stamps_per_s else 0.0
    return ratio_row(
        metric,
        seed.stamps_per_s,
        ours.stamps_per_s,
        "" if goal is None else f">= {goal:g}x",
        None if goal is None else ratio >= goal,
        ratio,
    )


def headline_rows(res: dict[str, dict[str, Result]]) -> list[Row]:
    rows: list[Row] = []
    seq, par, cold, hot = (res[k] for k in ("uncontended-1", "uncontended-8", "cold-cache", "hot"))
    for label, r in (("1 task", seq), ("8 tasks", par)):
        s, o = r["seed"], r["ours"]
        rows.append(
            ratio_row(
                f"uncontended, {label}: requests/stamp",
                s.requests_per_stamp,
                o.requests_per_stamp,
                "ours = 1.0",
                abs(o.requests_per_stamp - 1.0) < 1e-9,
            )
        )
        # The goal is the issue's, set against the seed's 321 stamps/s on uncontended chains:
        # the seed's rate with concurrent tasks (one task gets about half), so the 8-task case.
        goal = 1.6 if label == "8 tasks" else None
        rows.append(throughput_row(f"uncontended, {label}: stamps/s", s, o, goal))
    off = seq.get("ours (coalescing off)")
    if off is not None:
        rows.append(
            throughput_row(
                "uncontended, 1 task, ours with coalesce=False: stamps/s", seq["seed"], off
            )
        )
    batch = par.get("ours (batch_writes)")
    if batch is not None:
        label = "uncontended, 8 tasks, ours with batch_writes=True"
        rows.append(throughput_row(f"{label}: stamps/s", par["seed"], batch))
        rows.append(
            ratio_row(
                f"{label}: requests/stamp", par["seed"].requests_per_stamp, batch.requests_per_stamp
            )
        )
        rows.append(
            ratio_row(
                f"{label}: client CPU per stamp (µs)",
                par["seed"].cpu_us_per_stamp,
                batch.cpu_us_per_stamp,
            )
        )
        rows.append(
            ratio_row(
                f"{label}: DynamoDB Local CPU per stamp (µs)",
                par["seed"].server_cpu_us_per_stamp,
                batch.server_cpu_us_per_stamp,
            )
        )
    rows.append(
        ratio_row(
            "uncontended, cold cache (chain made by another client): requests/stamp",
            cold["seed"].requests_per_stamp,
            cold["ours"].requests_per_stamp,
        )
    )
    s, o = hot["seed"], hot["ours"]
    per_round = s.stamps // max(1, len(s.round_stamps_per_s))
    rows.append(throughput_row(f"hot chain, 64 writers, {per_round} stamps: stamps/s", s, o, 10))
    rows.append(ratio_row("hot chain: requests/stamp", s.requests_per_stamp, o.requests_per_stamp))
    rows.append(
        Row(
            "hot chain: completes exactly (one caller saw acked, chain closed, no errors)",
            "yes" if s.exact else "**no**",
            "yes" if o.exact else "**no**",
            "",
            "exact",
            "yes" if o.exact else "**no**",
        )
    )
    rows.append(ratio_row("hot chain: latency p50 (ms)", s.latency_ms_p50, o.latency_ms_p50))
    rows.append(ratio_row("hot chain: latency p99 (ms)", s.latency_ms_p99, o.latency_ms_p99))
    off = hot.get("ours (coalescing off)")
    if off is not None:
        rows.append(throughput_row("hot chain, ours with coalesce=False: stamps/s", s, off))
        rows.append(
            ratio_row(
                "hot chain, ours with coalesce=False: requests/stamp",
                s.requests_per_stamp,
                off.requests_per_stamp,
            )
        )
    for label, r in (("uncontended 1 task", seq), ("uncontended 8 tasks", par), ("hot chain", hot)):
        rows.append(
            ratio_row(
                f"client CPU per stamp, {label} (µs)",
                r["seed"].cpu_us_per_stamp,
                r["ours"].cpu_us_per_stamp,
            )
        )
        rows.append(
            ratio_row(
                f"DynamoDB Local CPU per stamp, {label} (µs)",
                r["seed"].server_cpu_us_per_stamp,
                r["ours"].server_cpu_us_per_stamp,
            )
        )
    return rows


def markdown(
    meta: dict[str, Any],
    rows: Sequence[Row],
    scaling: dict[str, dict[int, dict[str, Result]]],
    profiles: Sequence[ProfileSummary],
    res: dict[str, dict[str, Result]],
) -> str:
    out = [
        "# Client benchmark: seed algorithm vs XorAckDynamoDB",
        "",
        f"`{meta['command']}` on {meta['date']} ({meta['machine']}), against "
        f"{meta['server']}. Stamps are {STAMP_BYTES} bytes; requests are HTTP requests sent, "
        "counted by a botocore `before-send` hook on each client. Setup (create, parent "
        "stamp) is not timed. Client and DynamoDB Local share the machine's CPUs (and the "
        f"machine is shared with other work: load average {meta['loadavg_before'][0]} before, "
        f"{meta['loadavg_after'][0]} after), so absolute rates are of this machine only; "
        "seed and ours run interleaved, round by round, so the ratios are the result.",
        "",
        "Where a case ran in rounds (seed, ours, then ours, seed, ...), its throughput "
        "ratio is the median of the ratios of rounds run back to back; the seed and ours "
        "columns are totals over all rounds.",
        "",
        "| metric | seed | ours | ours/seed | goal | met? |",
        "|---|---:|---:|---:|---|---|",
    ]
    out += [f"| {r.metric} | {r.seed} | {r.ours} | {r.ratio} | {r.goal} | {r.met} |" for r in rows]
    out += [
        "",
        "The stamps/s goal (1.6x) is set against the seed's 321 stamps/s on uncontended "
        "chains, which is the seed's rate with concurrent tasks (one task gets about half of "
        "it): the 8-task case. One sequential task is shown for what it is: there a stamp's "
        "time is one request's latency, and our conditional UpdateItem takes DynamoDB Local "
        "longer than the seed's PutItem (`--request-costs --lanes 1`).",
    ]
    out += ["", "## Scenario sizes, and what ours' own counters saw", ""]
    for key, per in res.items():
        r, o = per["seed"], per["ours"]
        stats = o.own_stats
        out.append(
            f"- `{key}`: {r.writers} writer task(s); seed {r.chains} chain(s), {r.stamps} "
            f"measured stamps; ours {o.chains} chain(s), {o.stamps} stamps, and its "
            f"`stats`: {stats.get('writes', 0)} writes, "
            f"{stats.get('requests', 0)} requests, {stats.get('stamps', 0)} stamps applied, "
            f"{stats.get('conflicts', 0)} conflicts; the seed lost "
            f"{r.own_stats.get('conflicts', 0)} races"
        )
    out += [
        "",
        "## Scaling (plot: `scaling.png`)",
        "",
        "| writers | one chain: seed stamps/s | ours stamps/s | seed req/stamp | ours req/stamp "
        "| distinct chains: seed stamps/s | ours stamps/s | seed req/stamp | ours req/stamp |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in sorted(scaling["one chain"]):
        one, dis = scaling["one chain"][w], scaling["distinct chains"][w]
        cells = [
            fmt(one["seed"].stamps_per_s),
            fmt(one["ours"].stamps_per_s),
            fmt(one["seed"].requests_per_stamp),
            fmt(one["ours"].requests_per_stamp),
            fmt(dis["seed"].stamps_per_s),
            fmt(dis["ours"].stamps_per_s),
            fmt(dis["seed"].requests_per_stamp),
            fmt(dis["ours"].requests_per_stamp),
        ]
        out.append(f"| {w} | " + " | ".join(cells) + " |")
    not_exact = [
        f"{k}/{w}/{n}"
        for k, per_w in scaling.items()
        for w, per in per_w.items()
        for n, r in per.items()
        if not r.exact
    ]
    out += ["", f"Every scaling run completed exactly: {not_exact or 'yes'}."]
    for p in profiles:
        out += [
            "",
            f"## Where the client CPU goes: {p.impl}, uncontended, 1 task",
            "",
            f"Process CPU {p.cpu_us_per_stamp:.0f} µs/stamp over {p.stamps} stamps, "
            f"{100 * p.kernel_share:.0f}% of it in the kernel. Split by cProfile (CPU timer; "
            f"{p.profiled_us_per_stamp:.0f} µs/stamp with its overhead, scaled back here); "
            "standard-library and builtin functions count for the library that called them.",
            "",
            "| where | CPU µs/stamp | share |",
            "|---|---:|---:|",
        ]
        total = sum(p.categories.values()) or 1.0
        out += [f"| {k} | {v:.0f} | {100 * v / total:.0f}% |" for k, v in p.categories.items()]
        out += [
            "",
            f"Top functions of {p.impl} by cumulative CPU under the profiler (per stamp):",
            "",
            "| function | calls/stamp | cumulative µs | self µs |",
            "|---|---:|---:|---:|",
        ]
        out += [
            f"| `{t['function']}` | {t['calls_per_stamp']} | {t['cumulative_us_per_stamp']} "
            f"| {t['self_us_per_stamp']} |"
            for t in p.top[:12]
        ]
    return "\n".join(out) + "\n"
