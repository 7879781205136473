"""The second example: per-file ETL with a join into partitioned Parquet, tracked, faults on."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from xor_ack_dynamodb.spark.examples.orders import orders_etl
from xor_ack_dynamodb.spark.faults import FaultConfig

CUSTOMERS = {"ada": "uk", "bob": "us", "cyd": "fr", "dee": "us"}


def make_orders(root: Path, files: int = 8, seed: int = 3) -> set[tuple[int, str, int, str]]:
    """Order files with some bad lines; the rows the output must hold (joined)."""
    rng = random.Random(seed)
    expected: set[tuple[int, str, int, str]] = set()
    next_id = 1
    for f in range(files):
        path = root / f"day-{f:02d}.csv"
        lines = ["order_id,customer,amount"]
        for _ in range(rng.randint(3, 15)):
            customer = rng.choice([*CUSTOMERS, "zed"])  # zed has no customer row: no output
            cents = rng.randint(1, 99_999)
            lines.append(f"{next_id},{customer},{cents // 100}.{cents % 100:02d}")
            if customer in CUSTOMERS:
                expected.add((next_id, customer, cents, CUSTOMERS[customer]))
            next_id += 1
        lines += ["oops", f"{next_id},ada,1.005", "x,bob,3.00"]  # rejected lines
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return expected


def test_orders_etl_joined_parquet_exact_under_faults(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    (tmp_path / "orders").mkdir()
    expected = make_orders(tmp_path / "orders")
    customers = local_spark.createDataFrame(
        list(CUSTOMERS.items()), "customer string, country string"
    )
    out = tmp_path / "orders-out"
    report = orders_etl(
        local_spark,
        str(tmp_path / "orders"),
        customers,
        str(out),
        table=chains_env,
        faults=FaultConfig.rate(0.3, seed=4),
        partitions=8,
    )
    assert report.ok, report.to_json()
    assert any(i.attempts > 1 for i in report.inputs), "no replay: the faults proved nothing"
    rows = local_spark.read.parquet(str(out)).collect()
    got = [(r["order_id"], r["customer"], r["cents"], r["country"]) for r in rows]
    assert len(got) == len(set(got))  # no row twice
    assert set(got) == expected
    assert {p.name for p in out.iterdir() if p.is_dir()} == {
        "country=fr",
        "country=uk",
        "country=us",
    }
