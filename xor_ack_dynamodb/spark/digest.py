"""Order-independent digests of an input's rows, and the stamps made of them.

A stage declares the rows it produced for an input and the commit check states
the rows that were committed for it; both use the same function of the row
multiset, so the chain is zero exactly when the two multisets are equal.

``row_sum`` adds one keyed 128-bit hash per row, modulo 2**128: the order of
the rows does not matter, a duplicated row counts twice (an XOR would cancel
it), and partial sums computed in different tasks add up to the sum of the
whole.  The stamp is a keyed hash of ``(tag, sum)`` (``Keyed``), never the sum
itself, so that two wrong multisets leave two unrelated random values.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..pipeline.keyed import Keyed

MOD = 1 << 128


def _row_bytes(row: tuple[Any, ...]) -> bytes:
    # repr of Python values read back from Arrow (str, int, float, bytes, None, Decimal,
    # date, datetime, lists, dicts) is stable for equal values of equal types.
    return repr(row).encode("utf-8", "surrogatepass")


def row_sum(run_id: str, table: Any, columns: list[str]) -> int:
    """Sum modulo 2**128 of the keyed hashes of ``table``'s rows (``columns``, in order)."""
    key = hashlib.blake2b(run_id.encode("utf-8", "surrogatepass"), digest_size=32).digest()
    total = 0
    data = [table.column(name).to_pylist() for name in columns]
    for row in zip(*data, strict=True):
        h = hashlib.blake2b(_row_bytes(row), key=key, digest_size=16).digest()
        total += int.from_bytes(h, "big")
    return total % MOD


def sum_bytes(total: int) -> bytes:
    return (total % MOD).to_bytes(16, "big")


def rows_stamp(keyed: Keyed, tag: str, total: int) -> bytes:
    """The stamp of a multiset of rows of ``tag``'s input (declared or committed)."""
    return keyed.hash("rows", tag, sum_bytes(total))


def stage_token(keyed: Keyed, stage: str, tag: str, value: bytes) -> bytes:
    """The idempotency token of a stage's stamp: identical work, identical token."""
    return keyed.hash(stage, tag, value)
