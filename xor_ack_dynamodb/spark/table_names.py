"""The names of a new table that Spark's session catalog takes (checked before a run)."""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidArgument

#: A name Spark's session catalog takes (its ``validateName``): ASCII letters, digits, ``_``.
_SESSION_NAME = re.compile(r"[A-Za-z0-9_]+")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]")


def session_name(text: str) -> str:
    """``text`` with every character a session catalog name cannot hold as ``_`` (a "."
    would split it into a namespace)."""
    return _NOT_IN_NAME.sub("_", text)


def refuse_name(spark: Any, table: str) -> None:
    """Refuse a new table's name that Spark's session catalog would refuse only after
    ``saveAsTable`` wrote every row into a folder of that name (``db.`daily-counts```);
    a table of another catalog (``catalog.db.table``) is that catalog's to judge."""
    parts = [part.strip("`") for part in table.split(".")]
    if len(parts) == 3:
        if parts[0].lower() != "spark_catalog":
            return
        parts = parts[1:]
    else:
        try:
            if str(spark.catalog.currentCatalog()) != "spark_catalog":
                return
        except Exception:  # a session that cannot say: the session catalog's rule holds
            pass
    bad = [part for part in parts if not _SESSION_NAME.fullmatch(part)]
    if bad:
        raise InvalidArgument(
            f"Sink(table={table!r}): Spark's session catalog takes names of ASCII letters, "
            f"digits and _ only, not {bad[0]!r}: name the table (and its database) so"
        )
