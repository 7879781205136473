"""Columns a tracked job's source is made of: the file each row was read from, as a path."""

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
