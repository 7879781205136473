"""A per-file ETL on the same API: CSV order files -> cleaned rows -> joined -> Parquet.

Each input is one CSV file of orders (``order_id,customer,amount``).  The
function keeps the valid lines of the file (an integer id, a non-empty
customer, an amount with at most two decimals), turns the amount into cents and
records the file the row came from; the sink joins the acked files' rows with a
customers table (a DataFrame join) and writes Parquet partitioned by country.
A file that was replayed contributes its rows once; a line the function rejects
is never in the output, and never makes the file fail.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from .. import Sink, TrackedReport, track
from ..faults import FaultConfig

SCHEMA = "order_id long, customer string, cents long, file string"


def clean_orders(key: str, rows: Any) -> Any:
    """The valid orders of one file (column ``value``: its lines, a header first)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    ids: list[int] = []
    customers: list[str] = []
    cents: list[int] = []
    for line in rows.column("value").to_pylist():
        parts = str(line).split(",")
        if len(parts) != 3 or parts[0] == "order_id":
            continue
        order, customer, amount = (p.strip() for p in parts)
        try:
            value = Decimal(amount)
        except InvalidOperation:
            continue
        if not order.isdigit() or not customer or value != value.quantize(Decimal("0.01")):
            continue
        ids.append(int(order))
        customers.append(customer)
        cents.append(int(value * 100))
    return pa.table(
        {"order_id": ids, "customer": customers, "cents": cents, "file": [key] * len(ids)}
    )


def orders_etl(
    spark: Any,
    input_: str,
    customers: Any,
    output: str,
    *,
    table: str | None = None,
    faults: FaultConfig | None = None,
    partitions: int | None = None,
) -> TrackedReport:
    """Clean every order file under ``input_``, join ``customers`` (customer, country)."""
    from pyspark.sql import functions as F

    from .wordcount import text_lines

    lines = text_lines(spark.read, input_, key="file_key")
    return track(
        spark,
        clean_orders,
        SCHEMA,
        Sink(
            output,
            format="parquet",
            partition_by=("country",),
            finish=lambda rows: rows.join(F.broadcast(customers), "customer"),
        ),
        source=lines,
        key="file_key",
        table=table,
        faults=faults,
        partitions=partitions,
    )
