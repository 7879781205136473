"""A run's inputs, listed and planned in pages: O(page) on the driver, not O(inputs).

Inputs come from ``keys=`` (the caller's sequence: deduplicated and sorted once,
then cut) or from the distinct keys of a source DataFrame, sorted by Spark and
brought to the driver a partition at a time (``toLocalIterator``); a source's rows
whose key is null are in no input, and counted.  Each page of
at most ``page_size`` inputs goes through its rounds (create, produce, check,
judge, replay) before the next page is listed further; each input gets a global
id (its position in the sorted listing), which its staged rows carry.

The source is read once per page and round (the join of its rows with the
page's keys): cache it, or raise ``page_size``, when reading it is costly.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .columns import named
from .errors import InvalidArgument

#: Inputs per page: their chains, entries and marker rows are what the driver holds, for
#: this page and the next (created ahead).  5,000: at 100,000 inputs as keys the driver's
#: Python grew about 30 MiB less than with 10,000, and the run was no slower
#: (``benchmarks/results/pipeline-keys.md``); a costly source is read once per page.
DEFAULT_PAGE_SIZE = 5_000


@dataclass(frozen=True)
class Page:
    """Page ``number`` of a run's inputs: ``keys``, the first one's id ``start``."""

    number: int
    start: int
    keys: tuple[str, ...]

    @property
    def ids(self) -> range:
        return range(self.start, self.start + len(self.keys))

    def key(self, input_id: int) -> str:
        return self.keys[input_id - self.start]


def sorted_keys(
    source: Any,
    key: str | None,
    keys: Sequence[str] | None,
    keyless: Callable[[int | None], None] = lambda rows: None,
) -> tuple[Iterator[str], int | None]:
    """The run's input keys in order, each once, as an iterator that lists as it goes,
    and how many there are when that is known before listing (``keys``).

    A source's rows whose key is null belong to no input: ``keyless`` is told how many
    there are (if any) as the listing starts, from the same Spark job (the keys are
    grouped and counted, the null group first); None with ``keys`` and a source, which
    is not listed (its rows of other keys are in no input either)."""
    if keys is not None:
        if source is not None:
            keyless(None)
        given = sorted(dict.fromkeys(str(k) for k in keys))
        return iter(given), len(given)
    from pyspark.sql import functions as F

    assert key is not None
    # Named apart from any source column: a key column called ``count`` stays unambiguous.
    column = key_of(key).alias("_xa_key")
    listed = (
        source.groupBy(column)
        .agg(F.count(F.lit(1)).alias("_xa_rows"))
        .orderBy(F.col("_xa_key").asc_nulls_first())
    )
    return _listed(listed.toLocalIterator(), keyless), None


def key_of(column: str) -> Any:
    """A source row's input key, as the listing names inputs and the rounds join rows with
    them: the column as a string, its bytes made valid UTF-8 (U+FFFD for each malformed
    one).  The driver's keys are Python strings, which the JVM decodes that way; joined on
    the raw bytes, the rows of a key that is no valid UTF-8 (a Latin-1 writer's) matched no
    input, and the input was acked with none of its rows."""
    from pyspark.sql import functions as F

    return F.make_valid_utf8(named(column).cast("string"))


def _listed(rows: Iterator[Any], keyless: Callable[[int], None]) -> Iterator[str]:
    for value, count in rows:
        if value is None:  # the first row, if any: the rows of no input
            keyless(int(count))
        else:
            yield str(value)


def pages(listing: Iterator[str], size: int = DEFAULT_PAGE_SIZE) -> Iterator[Page]:
    """``listing`` cut into pages of at most ``size`` keys, ids counted from 0."""
    if size < 1:
        raise InvalidArgument("page_size must be >= 1")
    start = 0
    for number in itertools.count():
        chunk = tuple(itertools.islice(listing, size))
        if not chunk:
            return
        yield Page(number, start, chunk)
        start += len(chunk)


def ahead(items: Iterator[Page]) -> Iterator[tuple[Page, Page | None]]:
    """Each page with the next one (None after the last): listed one page ahead."""
    current = next(items, None)
    while current is not None:
        following = next(items, None)
        yield current, following
        current = following
