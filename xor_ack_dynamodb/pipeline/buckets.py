"""Which counting task (stage-2 partition) a word goes to.

A stable hash (CRC-32 of the UTF-8 bytes), not Python's ``hash``: a re-run of a
stage-1 task on another worker must put every word in the same bucket, or its
stamp would differ from the first attempt's.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable


def bucket_of(word: str, partitions: int) -> int:
    return zlib.crc32(word.encode("utf-8", "surrogatepass")) % partitions


def split_into_buckets(
    counts: Iterable[tuple[str, int]], partitions: int
) -> list[list[tuple[str, int]]]:
    """``counts`` grouped by bucket: one list per partition (empty lists included)."""
    buckets: list[list[tuple[str, int]]] = [[] for _ in range(partitions)]
    for word, n in counts:
        buckets[bucket_of(word, partitions)].append((word, n))
    return buckets


def identity_partition(key: int) -> int:
    """Spark ``partitionFunc``: the record's key already is its partition."""
    return key
