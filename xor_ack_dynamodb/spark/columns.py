"""Columns a tracked job reads: one named as it is, the file each row was read from."""

from __future__ import annotations

from typing import Any


def input_file() -> Any:
    """The file each row was read from, as its path (``file:/data/a b.csv``).

    Spark's ``_metadata.file_path`` is the file's URI, URL-encoded
    (``file:/data/a%20b.csv``); this decodes it, ``+`` kept as it is, so that an
    input's key is the path the user gave and can open.  Use it as the source's key
    column: ``spark.read.csv(folder).withColumn("file", input_file())``.
    """
    from pyspark.sql import functions as F

    uri = F.col("_metadata.file_path")
    return F.url_decode(F.replace(uri, F.lit("+"), F.lit("%2B")))


def named(name: str) -> Any:
    """The column called ``name``, whatever its characters: a bare ``F.col("a.b")`` is
    field ``b`` of a column ``a`` (``UNRESOLVED_COLUMN`` where there is none)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")
