"""The row digest: the same multiset of rows gives the same sum, whatever the order,
the split into batches or the Arrow flavour of a type; any change to a row changes it."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from xor_ack_dynamodb.spark.digest import (
    MOD,
    lanes_sums_by,
    row_lanes,
    row_sum,
)

COLUMNS = ["s", "i", "f", "b", "blob", "day", "at", "price", "tags"]


def mixed() -> pa.Table:
    """One column of each kind the digest knows, and two it hashes value by value."""
    return pa.table(
        {
            "s": pa.array(["a", "", None, "ü", "a"], pa.string()),
            "i": pa.array([1, 0, None, -7, 1], pa.int64()),
            "f": pa.array([0.5, -0.0, None, float("nan"), 0.5], pa.float64()),
            "b": pa.array([True, False, None, True, True]),
            "blob": pa.array([b"\x00", b"", None, b"xy", b"\x00"], pa.binary()),
            "day": pa.array([dt.date(2026, 1, 1), None, dt.date(1970, 1, 1), None, None]),
            "at": pa.array(
                [dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC), None, None, None, None],
                pa.timestamp("us", tz="UTC"),
            ),
            "price": pa.array(
                [Decimal("1.50"), None, Decimal("0"), Decimal("2"), Decimal("1.50")],
                pa.decimal128(10, 2),
            ),
            "tags": pa.array([["x"], [], None, ["x", "y"], ["x"]], pa.list_(pa.string())),
        }
    )


def test_order_split_and_duplicates_over_every_kind_of_column() -> None:
    rows = mixed()
    whole = row_sum("run", rows, COLUMNS)
    assert whole == row_sum("run", rows.take([4, 3, 2, 1, 0]), COLUMNS)
    halves = row_sum("run", rows.slice(0, 2), COLUMNS) + row_sum("run", rows.slice(2), COLUMNS)
    assert whole == halves % MOD
    assert row_sum("run", rows.slice(0, 4), COLUMNS) != whole  # row 4 repeats row 0: it counts
    assert row_sum("other run", rows, COLUMNS) != whole
    assert row_sum("run", rows.slice(0, 0), COLUMNS) == 0


def test_arrow_flavours_of_one_type_hash_alike() -> None:
    narrow = pa.table({"s": pa.array(["a", None], pa.string()), "i": pa.array([1, 2], pa.int32())})
    wide = pa.table(
        {"s": pa.array(["a", None], pa.large_string()), "i": pa.array([1, 2], pa.int64())}
    )
    chunked = pa.Table.from_batches(narrow.to_batches(max_chunksize=1))
    dictionary = narrow.set_column(0, "s", narrow.column("s").dictionary_encode())
    expected = row_sum("run", narrow, ["s", "i"])
    for table in (wide, chunked, dictionary):
        assert row_sum("run", table, ["s", "i"]) == expected


def test_a_change_to_any_value_changes_the_sum() -> None:
    rows = mixed()
    whole = row_sum("run", rows, COLUMNS)
    variants = {
        "s": ["b", "", None, "ü", "a"],  # a value
        "i": [1, None, None, -7, 1],  # 0 -> null
        "f": [0.5, 0.0, None, float("nan"), 0.5],  # -0.0 -> 0.0
        "b": [True, None, None, True, True],  # False -> null
        "blob": [b"\x00", None, None, b"xy", b"\x00"],  # empty -> null
    }
    for name, values in variants.items():
        changed = rows.set_column(
            COLUMNS.index(name), name, pa.array(values, rows.schema.field(name).type)
        )
        assert row_sum("run", changed, COLUMNS) != whole, name
    swapped = pa.table({"x": ["a", "a"], "y": ["b", "c"]})  # column order counts
    assert row_sum("run", swapped, ["x", "y"]) != row_sum("run", swapped, ["y", "x"])
    empty_vs_null = pa.table({"s": pa.array(["", None])})
    assert row_sum("run", empty_vs_null.slice(0, 1), ["s"]) != row_sum(
        "run", empty_vs_null.slice(1, 1), ["s"]
    )


def test_sums_by_group_are_each_groups_row_sum() -> None:
    rows = mixed().append_column("id", pa.array([3, 1, 3, 2, 1], pa.int32()))
    ids = np.asarray(rows.column("id").to_numpy())
    by = lanes_sums_by(ids, row_lanes("run", rows, COLUMNS))
    assert set(by) == {1, 2, 3}
    for group, total in by.items():
        mask = pc.equal(rows.column("id"), group)
        assert total == row_sum("run", rows.filter(mask), COLUMNS)


words = st.lists(
    st.tuples(
        st.one_of(st.none(), st.text(max_size=6)),
        st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(words, st.data())
def test_any_split_adds_up_and_a_lost_row_shows(
    rows: list[tuple[str | None, int | None]], data: st.DataObject
) -> None:
    table = pa.table(
        {
            "w": pa.array([r[0] for r in rows], pa.string()),
            "n": pa.array([r[1] for r in rows], pa.int64()),
        }
    )
    whole = row_sum("run", table, ["w", "n"])
    cut = data.draw(st.integers(0, len(rows)))
    parts = row_sum("run", table.slice(0, cut), ["w", "n"]) + row_sum(
        "run", table.slice(cut), ["w", "n"]
    )
    assert parts % MOD == whole
    if rows:
        lost = data.draw(st.integers(0, len(rows) - 1))
        kept = table.take(pa.array([i for i in range(len(rows)) if i != lost], pa.int64()))
        assert row_sum("run", kept, ["w", "n"]) != whole
