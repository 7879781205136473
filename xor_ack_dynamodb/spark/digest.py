"""Order-independent digests of an input's rows, and the stamps made of them.

A stage declares the rows it produced for an input and the commit check states
the rows that were committed for it; both use the same function of the row
multiset, so the chain is zero exactly when the two multisets are equal.

``row_sum`` adds one 128-bit hash per row, modulo 2**128: the order of the rows
does not matter, a duplicated row counts twice (an XOR would cancel it), and
partial sums computed in different tasks add up to the sum of the whole.  The
stamp is a keyed hash of ``(tag, sum)`` (``Keyed``), never the sum itself, so
that two wrong multisets leave two unrelated random values.

A row's hash is computed column by column over whole Arrow arrays (numpy), not
row by row in Python: two 64-bit lanes, each seeded from the run id, each
column's values hashed by their kind (integers, dates and times as 64-bit
integers, floats by their bits, strings and binaries with pandas' keyed
SipHash, nulls as a constant of their own), then mixed into the row's lanes in
column order.  Columns of other types (decimals, lists, structs, maps) hash
each value's ``repr`` with BLAKE2b, one Python call per value.  Both sides of a
check read the same declared schema, so a value is hashed the same way on
both; ``string`` and ``large_string`` (or ``binary`` and ``large_binary``) hash
alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from .keyed import Keyed

MOD = 1 << 128
_LANES = 2
_U64 = np.uint64
#: splitmix64's constants: a bijective, well-spread mix of 64 bits.
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_MIX1 = _U64(0xBF58476D1CE4E5B9)
_MIX2 = _U64(0x94D049BB133111EB)
_NULL = _U64(0x6A09E667F3BCC908)  # a null value's hash, before the lane's seed


class _Seeds:
    """What a run's digests are keyed with: per lane, a numpy seed and a SipHash key."""

    def __init__(self, run_id: str) -> None:
        key = hashlib.blake2b(run_id.encode("utf-8", "surrogatepass"), digest_size=32).digest()
        self.blake_key = key
        self.seeds = [_U64(int.from_bytes(key[8 * i : 8 * i + 8], "big")) for i in range(_LANES)]
        # pandas wants a 16-character key (16 bytes in UTF-8): hex of 8 bytes.
        self.sip_keys = [key[16 + 8 * i : 24 + 8 * i].hex() for i in range(_LANES)]


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over an array of uint64 (wrapping arithmetic)."""
    x = x ^ (x >> _U64(30))
    x = x * _MIX1
    x = x ^ (x >> _U64(27))
    x = x * _MIX2
    mixed: np.ndarray = x ^ (x >> _U64(31))
    return mixed


def _values(column: Any) -> tuple[np.ndarray | None, np.ndarray | None, Any]:
    """A column as (uint64 words, or None; the Python objects to SipHash, or None; the array).

    Exactly one of the first two is given for a column hashed vectorised; neither for a
    column of another type (hashed value by value).
    """
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    kind = array.type
    if pa.types.is_boolean(kind):
        return _words(pc.fill_null(array, False).cast(pa.int64())), None, array
    if pa.types.is_integer(kind):
        wide = pa.uint64() if pa.types.is_unsigned_integer(kind) else pa.int64()
        return _words(pc.fill_null(array.cast(wide), 0)), None, array
    if pa.types.is_temporal(kind) and getattr(kind, "bit_width", 0) in (32, 64):
        # dates, times, timestamps, durations: the integers they are stored as
        stored = array.view(pa.int32() if kind.bit_width == 32 else pa.int64())
        return _words(pc.fill_null(stored.cast(pa.int64()), 0)), None, array
    if pa.types.is_floating(kind):
        filled = pc.fill_null(array.cast(pa.float64()), 0.0)
        return filled.to_numpy(zero_copy_only=False).astype(np.float64).view(_U64), None, array
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return None, pc.fill_null(array, "").to_numpy(zero_copy_only=False), array
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return None, pc.fill_null(array, b"").to_numpy(zero_copy_only=False), array
    return None, None, array


def _words(array: Any) -> np.ndarray:
    """An Arrow array of 64-bit integers, without nulls, as uint64 (same bits)."""
    values = np.asarray(array.to_numpy(zero_copy_only=False))
    return values.view(_U64) if values.dtype.itemsize == 8 else values.astype(_U64)


def _column_lanes(column: Any, seeds: _Seeds) -> list[np.ndarray]:
    """Per lane, the uint64 hash of each value of ``column`` (nulls: a constant)."""
    from pandas.util import hash_array  # type: ignore[import-untyped]

    words, objects, array = _values(column)
    lanes: list[np.ndarray] = []
    for lane in range(_LANES):
        seed = seeds.seeds[lane]
        if words is not None:
            hashed = _mix(words ^ seed)
        elif objects is not None:
            hashed = hash_array(objects, hash_key=seeds.sip_keys[lane], categorize=False)
            hashed = hashed.astype(_U64, copy=False)
        else:
            hashed = np.fromiter(
                (_python_hash(value, seeds.blake_key, lane) for value in array.to_pylist()),
                dtype=_U64,
                count=len(array),
            )
        if array.null_count:
            valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            hashed = np.where(valid, hashed, _mix(np.full(len(array), _NULL ^ seed, dtype=_U64)))
        lanes.append(hashed)
    return lanes


def _python_hash(value: Any, key: bytes, lane: int) -> int:
    # repr of Python values read back from Arrow (Decimal, lists, dicts, tuples) is stable
    # for equal values of equal types.
    data = repr(value).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(data, key=key, digest_size=8, person=b"lane%d" % lane).digest()
    return int.from_bytes(digest, "big")


def row_lanes(run_id: str, table: Any, columns: Sequence[str]) -> list[np.ndarray]:
    """Per lane, each row's 64-bit hash (``columns`` of ``table``, in that order)."""
    seeds = _Seeds(run_id)
    rows = table.num_rows
    lanes = [np.full(rows, seed, dtype=_U64) for seed in seeds.seeds]
    for position, name in enumerate(columns):
        hashed = _column_lanes(table.column(name), seeds)
        for lane in range(_LANES):
            lanes[lane] = _mix(lanes[lane] * _GOLDEN + hashed[lane] + _U64(position + 1))
    return lanes


def _exact_sums(values: np.ndarray, starts: np.ndarray | None = None) -> list[int]:
    """Exact sums of uint64 values (all of them, or each group from ``starts`` on)."""
    low = values & _U64(0xFFFFFFFF)
    high = values >> _U64(32)
    if starts is None:
        return [int(low.sum(dtype=_U64)) + (int(high.sum(dtype=_U64)) << 32)]
    lows = np.add.reduceat(low, starts, dtype=_U64)
    highs = np.add.reduceat(high, starts, dtype=_U64)
    return [int(lo) + (int(hi) << 32) for lo, hi in zip(lows, highs, strict=True)]


def combine_lanes(lane_sums: Sequence[Sequence[int]]) -> list[int]:
    """Per group, the 128-bit row hashes' sum: lane 0 the high 64 bits, lane 1 the low."""
    high, low = lane_sums
    return [((h << 64) + lo) % MOD for h, lo in zip(high, low, strict=True)]


def lanes_sum(lanes: Sequence[np.ndarray]) -> int:
    """The sum modulo 2**128 of the 128-bit row hashes given as their two lanes."""
    if not len(lanes[0]):
        return 0
    return combine_lanes([_exact_sums(lane) for lane in lanes])[0]


def lanes_sums_by(ids: np.ndarray, lanes: Sequence[np.ndarray]) -> dict[int, int]:
    """``lanes_sum`` of each group of rows sharing an id (``ids``, one per row)."""
    if not len(ids):
        return {}
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    sums = combine_lanes([_exact_sums(lane[order], starts) for lane in lanes])
    return {int(ids[s]): total for s, total in zip(starts, sums, strict=True)}


def row_sum(run_id: str, table: Any, columns: Sequence[str]) -> int:
    """Sum modulo 2**128 of the rows' 128-bit hashes (``columns`` of ``table``, in order)."""
    return lanes_sum(row_lanes(run_id, table, columns))


def sum_bytes(total: int) -> bytes:
    return (total % MOD).to_bytes(16, "big")


def rows_stamp(keyed: Keyed, tag: str, total: int) -> bytes:
    """The stamp of a multiset of rows of ``tag``'s input (declared or committed)."""
    return keyed.hash("rows", tag, sum_bytes(total))


def stage_token(keyed: Keyed, stage: str, tag: str, value: bytes) -> bytes:
    """The idempotency token of a stage's stamp: identical work, identical token."""
    return keyed.hash(stage, tag, value)
