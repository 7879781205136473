"""Where the committed rows go: a folder or a catalog table, changed only as the rules allow."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidArgument


def _plain_parts(name: str) -> bool:
    """Does ``name`` split on its dots (outside backticks) into parts none of which is
    empty or holds a dot?  (The catalog calls take the parts the library splits on dots.)"""
    parts, part, quoted = [], "", False
    for char in name:
        quoted ^= char == "`"
        if char == "." and not quoted:
            parts.append(part)
            part = ""
        else:
            part += char
    parts.append(part)
    return not quoted and all(p.strip("`").strip() and "." not in p for p in parts)


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
        for name in ("path", "table", "format"):
            value = getattr(self, name)
            if not isinstance(value, str) and (value is not None or name == "format"):
                raise InvalidArgument(f"Sink({name}={value!r}): give a string")
        if (self.path is None) == (self.table is None):
            raise InvalidArgument(
                "a Sink writes to a folder (path=...) or a catalog table (table=...): give one"
                + (", not both" if self.path is not None else "")
            )
        if self.path is not None and not self.path.strip():
            raise InvalidArgument("Sink(path=...) must not be empty")
        if self.table is not None and not _plain_parts(self.table):
            raise InvalidArgument(
                f"Sink(table={self.table!r}): give the table as name or database.name, a "
                "part in backticks if it needs them; a part may hold no dot and none be empty"
            )
        if self.files is not None and (
            isinstance(self.files, bool) or not isinstance(self.files, int) or self.files < 1
        ):
            raise InvalidArgument(
                f"Sink(files={self.files!r}): give a whole number >= 1, or None to leave it "
                "to Spark"
            )
        if isinstance(self.partition_by, str):
            raise InvalidArgument(
                f"Sink(partition_by={self.partition_by!r}) is one string: give a tuple of "
                f"column names, e.g. partition_by=({self.partition_by!r},)"
            )
        if not isinstance(self.partition_by, tuple | list) or not all(
            isinstance(column, str) for column in self.partition_by
        ):
            raise InvalidArgument(
                f"Sink(partition_by={self.partition_by!r}): give a tuple of column names"
            )
        if self.finish is not None and not callable(self.finish):
            raise InvalidArgument(
                f"Sink(finish={self.finish!r}) is not callable: give a function of the "
                "acked rows' DataFrame, or None to write them as they are"
            )

    @property
    def target(self) -> str:
        """What the sink writes: its folder, or ``table:db.name``."""
        return self.path if self.path is not None else f"table:{self.table}"
