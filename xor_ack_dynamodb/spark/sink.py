"""Where the committed rows go: a folder written by Spark, replaced only as ``paths`` allows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sink:
    """The output folder and how to write it.

    ``finish`` turns the acked inputs' rows (the columns the function declared)
    into what is written, e.g. a ``groupBy`` over all inputs; by default the rows
    are written as they are.  ``files``: how many files (``repartition``); None
    leaves it to Spark.  ``partition_by``: output sub-folders by these columns.
    ``overwrite`` replaces only a folder this library wrote
    (its manifest names everything in it), never anything else.
    """

    path: str
    format: str = "parquet"
    options: dict[str, str] = field(default_factory=dict)
    finish: Callable[[Any], Any] | None = None
    files: int | None = None
    partition_by: tuple[str, ...] = ()
    overwrite: bool = False
