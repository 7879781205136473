"""``--regimes direct,4ms``: the same cases direct and through the delay proxy, side by side.

Each regime gets its own pair of clients (seed and ours), the delayed ones pointed at a
``DelayProxy`` subprocess; all of them run interleaved, round by round, so a change of
load on the machine lands on every regime and both algorithms alike.  Every client asks
for ``ReturnConsumedCapacity=TOTAL`` (``RequestCounter(capacity=True)``), seed and ours.
Writes ``regimes.md`` and ``regimes.json`` to ``--out``.

Clients as each algorithm's users have them: ours is made with ``botocore_config()``, the
config ``XorAckDynamoDB.connect()`` uses (botocore's parameter validation off, a fixed
User-Agent); the seed's, which takes any client it is given, with the SDK's defaults and
the same pool, retries and timeouts (:func:`sdk_config`).  ``--same-config`` gives the seed
ours too, to compare the algorithms alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aioboto3
from botocore.config import Config

from xor_ack_dynamodb.retry import botocore_config

from . import cases
from .cases import Case, Result
from .common import CREDENTIALS, POOL, REGION, make_tables
from .counting import RequestCounter
from .delay_proxy import DelayProxy
from .impls import Impl, OursImpl, SeedImpl, TemplateImpl
from .report import fmt, paired_ratio
from .runner import Sizes, side_by_side

HOT_WRITERS = 64


@dataclass(frozen=True)
class Regime:
    """``direct``: straight to DynamoDB Local; ``<n>ms``: through the proxy, n ms per round trip."""

    name: str
    delay_ms: float


def sdk_config() -> Config:
    """``botocore_config``'s pool, retries and timeouts, with botocore's own per-request
    validation and User-Agent (the SDK's defaults for the two things ours turns off)."""
    return botocore_config(max_pool_connections=POOL, parameter_validation=True, user_agent=None)


def parse_regimes(text: str) -> list[Regime]:
    regimes = []
    for word in (w.strip() for w in text.split(",") if w.strip()):
        if word == "direct":
            regimes.append(Regime("direct", 0.0))
            continue
        try:
            delay = float(word.removesuffix("ms"))
        except ValueError:
            raise SystemExit(
                f"--regimes: {word!r} is neither 'direct' nor a delay like '4ms'"
            ) from None
        regimes.append(Regime("direct" if delay == 0 else f"{delay:g}ms", delay))
    if not regimes:
        raise SystemExit("--regimes: name at least one, e.g. --regimes direct,4ms")
    return regimes


async def pairs(
    stack: contextlib.AsyncExitStack,
    endpoint: str,
    regimes: Sequence[Regime],
    *,
    plain_tables: bool = False,
    same_config: bool = False,
    capacity: bool = True,
    references: bool = False,
    proxies: dict[str, DelayProxy] | None = None,
) -> dict[str, list[Impl]]:
    """Per regime, seed and ours on tables and clients of their own (``stack`` closes them).

    Ours on ``botocore_config()``, the seed on ``sdk_config()`` (or ours, ``same_config``);
    a regime with a delay through a ``DelayProxy`` of its own.  ``capacity``: both ask
    for ``ReturnConsumedCapacity=TOTAL`` (``RequestCounter``).  ``references``: after
    the two, the seed's algorithm on ours' config (``seed-ourscfg``) and ours' requests
    sent from templates (``floor``, ``TemplateImpl``), both on ours' config.  ``proxies``
    gets each delayed regime's proxy by regime name.
    """
    suffix = int(time.time())
    session = aioboto3.Session()
    configs = {"ours": botocore_config(max_pool_connections=POOL)}
    configs["seed"] = configs["ours"] if same_config else sdk_config()
    makers: list[tuple[str, Any, Config]] = [
        ("seed", SeedImpl, configs["seed"]),
        ("ours", OursImpl, configs["ours"]),
    ]
    if references:
        makers += [
            ("seed-ourscfg", SeedImpl, configs["ours"]),
            ("floor", TemplateImpl, configs["ours"]),
        ]
    impls: dict[str, list[Impl]] = {}
    for regime in regimes:
        url = endpoint
        if regime.delay_ms > 0:
            proxy = stack.enter_context(DelayProxy(endpoint, regime.delay_ms))
            url = proxy.endpoint_url
            if proxies is not None:
                proxies[regime.name] = proxy
        pair: list[Impl] = []
        for name, make, config in makers:
            table = f"bench-{name}-{regime.name}-{suffix}"
            make_tables(endpoint, [table], plain=plain_tables)
            client = await stack.enter_async_context(
                session.client(
                    "dynamodb",
                    endpoint_url=url,
                    region_name=REGION,
                    config=config,
                    **CREDENTIALS,
                )
            )
            counter = RequestCounter()
            counter.install(client, capacity=capacity)
            impl = make(client, table, counter)
            impl.name = f"{name} {regime.name}"
            pair.append(impl)
        impls[regime.name] = pair
    return impls


async def compare(
    endpoint: str,
    regimes: Sequence[Regime],
    sizes: Sizes,
    out: Path,
    meta: dict[str, Any],
    *,
    plain_tables: bool = False,
    same_config: bool = False,
) -> str:
    """Run the regimes' cases interleaved and write the side-by-side report."""
    if cases.watch_server().pid is None:
        print("DynamoDB Local's pid not found in /proc: no server CPU figures", flush=True)
    meta["seed_client"] = "ours (--same-config)" if same_config else "SDK defaults"
    k = sizes.children
    async with contextlib.AsyncExitStack() as stack:
        impls = await pairs(
            stack, endpoint, regimes, plain_tables=plain_tables, same_config=same_config
        )
        every = [impl for pair in impls.values() for impl in pair]
        print("warm-up (JIT of DynamoDB Local, connection pools)", flush=True)
        for _ in range(2):
            await side_by_side(every, Case("warm-up", 40, k, 8))
        measured = {
            "one writer": await side_by_side(
                every, Case("uncontended-1", sizes.uncontended_chains, k, 1), rounds=sizes.rounds
            ),
            "8 tasks": await side_by_side(
                every, Case("uncontended-8", sizes.parallel_chains, k, 8), rounds=sizes.rounds
            ),
            "hot tag": await side_by_side(
                every,
                Case("hot", 1, sizes.hot_stamps, HOT_WRITERS),
                rounds=1,
                rounds_for={f"ours {r.name}": sizes.hot_rounds_ours for r in regimes},
            ),
        }
    meta["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    text = markdown(meta, regimes, measured)
    (out / "regimes.md").write_text(text)
    payload = {
        "meta": meta,
        "regimes": [asdict(r) for r in regimes],
        "results": {c: {n: r.as_dict() for n, r in per.items()} for c, per in measured.items()},
    }
    (out / "regimes.json").write_text(json.dumps(payload, indent=2) + "\n")
    return text


def _per(value: float | None, n: int) -> float | None:
    return None if value is None or not n else value / n


def cpu_us_per_chain(r: Result) -> float:
    """Client CPU of whole chains (create, parent stamp, measured stamps) over their count."""
    return 1e6 * (r.setup_cpu_seconds + r.cpu_seconds) / r.chains if r.chains else 0.0


#: (metric, case, figure of a Result, whether a throughput ratio is paired over rounds).
METRICS: tuple[tuple[str, str, Any, bool], ...] = (
    ("stamp latency p50, one writer (ms)", "one writer", lambda r: r.latency_ms_p50, False),
    ("stamps/s, one writer", "one writer", lambda r: r.stamps_per_s, True),
    ("stamps/s, uncontended, 8 tasks", "8 tasks", lambda r: r.stamps_per_s, True),
    (f"stamps/s, hot tag ({HOT_WRITERS} writers)", "hot tag", lambda r: r.stamps_per_s, False),
    ("hot tag: latency p50 (ms)", "hot tag", lambda r: r.latency_ms_p50, False),
    ("requests/stamp, one writer", "one writer", lambda r: r.requests_per_stamp, False),
    ("requests/stamp, 8 tasks", "8 tasks", lambda r: r.requests_per_stamp, False),
    ("requests/stamp, hot tag", "hot tag", lambda r: r.requests_per_stamp, False),
    ("client CPU per chain, one writer (µs)", "one writer", cpu_us_per_chain, False),
    ("client CPU per chain, 8 tasks (µs)", "8 tasks", cpu_us_per_chain, False),
    ("client CPU per stamp, hot tag (µs)", "hot tag", lambda r: r.cpu_us_per_stamp, False),
    ("write units/stamp, 8 tasks", "8 tasks", lambda r: _per(r.write_units, r.stamps), False),
    ("read units/stamp, 8 tasks", "8 tasks", lambda r: _per(r.read_units, r.stamps), False),
    ("write units/stamp, hot tag", "hot tag", lambda r: _per(r.write_units, r.stamps), False),
    ("read units/stamp, hot tag", "hot tag", lambda r: _per(r.read_units, r.stamps), False),
)


def _throughput_ratio(seed: Result, ours: Result) -> float | None:
    paired = paired_ratio(seed, ours)
    if paired is not None:
        return paired
    return ours.stamps_per_s / seed.stamps_per_s if seed.stamps_per_s else None


def _cell(value: float | None) -> str:
    return "-" if value is None else fmt(value)


def markdown(
    meta: dict[str, Any], regimes: Sequence[Regime], measured: dict[str, dict[str, Result]]
) -> str:
    head = " | ".join(f"{r.name}: seed | {r.name}: ours | {r.name}: ours/seed" for r in regimes)
    out = [
        "# Client benchmark: direct and with network delay",
        "",
        f"`{meta['command']}` on {meta['date']} ({meta['machine']}), against {meta['server']}; "
        f"load average {meta['loadavg_before'][0]} before, {meta['loadavg_after'][0]} after. "
        "A delay regime sends every request through `benchmarks/client/delay_proxy.py`, a "
        "TCP proxy in a process of its own that holds each direction's bytes for half the "
        "delay (the delay is per round trip; the proxy's own hop adds a little more: "
        "`--check-proxy --delay-ms N` times one GetItem both ways). All regimes' clients "
        "run interleaved, round "
        "by round. Throughput ratios of cases run in rounds are medians of back-to-back "
        "round ratios; other columns are totals over the rounds. Clients: ours made with "
        "`botocore_config()` (as `connect()` makes it: parameter validation off, a fixed "
        "User-Agent), the seed's with "
        + (
            "the same config (`--same-config`: the algorithms alone)."
            if meta.get("seed_client", "").startswith("ours")
            else "the SDK's defaults (as its users pass one), both with the same pool, "
            "retries and timeouts."
        ),
        "",
        f"| metric | {head} |",
        "|---|" + "---:|" * (3 * len(regimes)),
    ]
    for metric, case, figure, paired in METRICS:
        cells = []
        for regime in regimes:
            seed = measured[case][f"seed {regime.name}"]
            ours = measured[case][f"ours {regime.name}"]
            s, o = figure(seed), figure(ours)
            if paired:
                ratio = _throughput_ratio(seed, ours)
            else:
                ratio = o / s if s and o is not None else None
            cells += [_cell(s), _cell(o), "-" if ratio is None else f"{ratio:.2f}x"]
        out.append(f"| {metric} | " + " | ".join(cells) + " |")
    exact = {f"{case}/{name}": r.exact for case, per in measured.items() for name, r in per.items()}
    answers = {name: r.answers_with_capacity for name, r in measured["8 tasks"].items()}
    out += [
        "",
        "Every case completed exactly (one caller saw acked per chain, chains closed, no "
        f"errors): {'yes' if all(exact.values()) else [k for k, v in exact.items() if not v]}.",
        "",
        "Client CPU per chain is this process's CPU time over the chains: setup (create, "
        "parent stamp) and the measured stamps together, "
        f"{sizes_line(measured)}. Capacity units are what DynamoDB Local reported with "
        "`ReturnConsumedCapacity=TOTAL` on every request of both algorithms; answers that "
        "reported any in the 8-task case: "
        + ", ".join(f"{n} {v}" for n, v in answers.items())
        + ". Failed conditional writes (the seed's lost races, ours' conflicts) report "
        "none in their error answer, although DynamoDB bills them; so on a contended tag "
        "the seed's write units here are a floor. The proxy's own CPU is not the client's "
        "and is not counted.",
    ]
    return "\n".join(out) + "\n"


def sizes_line(measured: dict[str, dict[str, Result]]) -> str:
    parts = []
    for case, per in measured.items():
        r = next(iter(per.values()))
        parts.append(f"{case}: {r.chains} chains, {r.stamps} measured stamps per implementation")
    return "; ".join(parts)
