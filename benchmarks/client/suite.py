"""The full run: every scenario for seed and ours, then ``client.md``, ``.json``, the plot."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import aioboto3

from xor_ack_dynamodb.retry import botocore_config

from . import cases
from .cases import Case, Result
from .common import CREDENTIALS, IMPLS, POOL, REGION, make_tables
from .counting import RequestCounter
from .cpu_profile import profile_case
from .impls import Impl, OursImpl, SeedImpl
from .plot import plot
from .report import headline_rows, markdown
from .runner import Sizes, side_by_side


async def bench(
    endpoint: str, sizes: Sizes, out: Path, meta: dict[str, Any], started: float
) -> None:
    suffix = f"{int(time.time())}"
    tables = {name: f"bench-{name}-{suffix}" for name in IMPLS}
    make_tables(endpoint, list(tables.values()))
    if cases.watch_server().pid is None:
        print("DynamoDB Local's pid not found in /proc: no server CPU figures", flush=True)
    session = aioboto3.Session()
    config = botocore_config(max_pool_connections=POOL)
    async with (
        session.client(
            "dynamodb", endpoint_url=endpoint, region_name=REGION, config=config, **CREDENTIALS
        ) as seed_client,
        session.client(
            "dynamodb", endpoint_url=endpoint, region_name=REGION, config=config, **CREDENTIALS
        ) as ours_client,
    ):
        seed_counter, ours_counter = RequestCounter(), RequestCounter()
        seed_counter.install(seed_client)
        ours_counter.install(ours_client)
        seed = SeedImpl(seed_client, tables["seed"], seed_counter)
        ours = OursImpl(ours_client, tables["ours"], ours_counter)
        ours_off = OursImpl(ours_client, tables["ours"], ours_counter, coalesce=False)
        ours_batch = OursImpl(ours_client, tables["ours"], ours_counter, batch_writes=True)
        both: list[Impl] = [seed, ours]
        k = sizes.children

        print("warm-up (JIT of DynamoDB Local, connection pools)", flush=True)
        for _ in range(2):  # every request shape measured later, PartiQL batches included
            await side_by_side([*both, ours_batch], Case("warm-up", 40, k, 8))
        res: dict[str, dict[str, Result]] = {}
        print("uncontended", flush=True)
        res["uncontended-1"] = await side_by_side(
            [*both, ours_off] if sizes.uncontended_without_coalescing else both,
            Case("uncontended-1", sizes.uncontended_chains, k, 1),
            rounds=sizes.rounds,
        )
        res["uncontended-8"] = await side_by_side(
            [*both, ours_batch],
            Case("uncontended-8", sizes.parallel_chains, k, 8),
            rounds=sizes.rounds,
        )
        res["cold-cache"] = await side_by_side(
            both,
            Case("cold-cache", sizes.cold_chains, k, 1, cold=True),
            rounds=max(1, sizes.rounds // 2),
        )
        print("hot chain", flush=True)
        hot_impls: list[Impl] = [*both, ours_off] if sizes.hot_without_coalescing else both
        res["hot"] = await side_by_side(
            hot_impls,
            Case("hot", 1, sizes.hot_stamps, 64),
            rounds=1,
            rounds_for={"ours": sizes.hot_rounds_ours},
        )
        print("scaling", flush=True)
        scaling: dict[str, dict[int, dict[str, Result]]] = {"one chain": {}, "distinct chains": {}}
        for w in sizes.scaling_writers:
            total = max(sizes.scaling_stamps, w)
            # The seed on one hot chain takes tens of seconds past 16 writers, where the
            # gap is two orders of magnitude: one round there, interleaved rounds elsewhere.
            one_rounds = sizes.scaling_rounds if w <= 16 else 1
            scaling["one chain"][w] = await side_by_side(
                both, Case("scaling-one", 1, total, w), rounds=one_rounds
            )
            scaling["distinct chains"][w] = await side_by_side(
                both,
                Case("scaling-distinct", w, max(1, total // w), w),
                rounds=sizes.scaling_rounds,
            )
        print("profile", flush=True)
        profiles = [
            await profile_case(impl, Case("profile", sizes.profile_chains, k, 1), out)
            for impl in (ours, seed)
        ]

    meta["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    meta["seconds"] = round(time.monotonic() - started)
    rows = headline_rows(res)
    text = markdown(meta, rows, scaling, profiles, res)
    (out / "client.md").write_text(text)
    plot(scaling, out / "scaling.png")
    payload = {
        "meta": meta,
        "goals": [asdict(r) for r in rows],
        "results": {k: {n: r.as_dict() for n, r in v.items()} for k, v in res.items()},
        "scaling": {
            kind: {str(w): {n: r.as_dict() for n, r in per.items()} for w, per in per_w.items()}
            for kind, per_w in scaling.items()
        },
        "profiles": [asdict(p) for p in profiles],
    }
    (out / "client.json").write_text(json.dumps(payload, indent=2) + "\n")
    print()
    print(text)
