"""Where the committed rows go: a folder or a catalog table, changed only as the rules allow."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidArgument


@dataclass(frozen=True)
class Sink:
    """The output (a folder ``path``, or a catalog ``table``) and how to write it.

    ``finish`` turns the acked inputs' rows (the columns the function declared)
    into what is written, e.g. a ``groupBy`` over all inputs; by default the rows
    are written as they are.  ``files``: how many files (``repartition``); None
    leaves it to Spark.  ``partition_by``: output sub-folders by these columns.

    A folder: ``overwrite`` replaces only a folder this library wrote (its manifest
    names everything in it), never anything else, and only with a complete output
    (every input acked).  A table (``table="db.name"``, through the session's
    catalog): the rows are appended (``overwrite``: the table's rows are replaced),
    only when every input acked; a table that does not exist is created with
    ``format`` (an existing one keeps its own format).

    ``partial=True`` asks for the acked inputs' rows even when some input failed:
    an existing output is then replaced (with ``overwrite``) by a partial one, and a
    table appended to.  A partial folder never has Spark's ``_SUCCESS`` marker and
    its manifest says ``"complete": false``.
    """

    path: str | None = None
    format: str = "parquet"
    options: dict[str, str] = field(default_factory=dict)
    finish: Callable[[Any], Any] | None = None
    files: int | None = None
    partition_by: tuple[str, ...] = ()
    overwrite: bool = False
    table: str | None = None
    partial: bool = False

    def __post_init__(self) -> None:
        if (self.path is None) == (self.table is None):
            raise InvalidArgument("a Sink needs a folder (path=...) or a catalog table (table=...)")
        if self.path is not None and not self.path.strip():
            raise InvalidArgument("Sink(path=...) must not be empty")

    @property
    def target(self) -> str:
        """What the sink writes: its folder, or ``table:db.name``."""
        return self.path if self.path is not None else f"table:{self.table}"
