"""What a job declares, checked against Spark before anything runs: its rows' schema (DDL)
and the column of its source that names each row's input."""

from __future__ import annotations

from typing import Any

from .errors import InvalidArgument, KeyColumnMissing, SchemaInvalid
from .output import said


def schema_struct(spark: Any, ddl: str) -> Any:
    """The ``StructType`` of the rows ``ddl`` declares, or :class:`SchemaInvalid`."""
    from pyspark.errors import AnalysisException, ParseException

    if not isinstance(ddl, str):
        raise SchemaInvalid(
            f"schema={ddl!r} is not a string: declare the columns your function returns "
            'as DDL, e.g. "word string, n long"'
        )
    try:
        struct = spark.createDataFrame([], ddl).schema
    except (ParseException, AnalysisException) as exc:
        raise SchemaInvalid(
            f"the schema {ddl!r} is not one Spark reads ({said(exc)}): declare the columns "
            'your function returns as DDL, e.g. "word string, n long"'
        ) from exc
    if not struct.fields:
        raise SchemaInvalid(
            f"the schema {ddl!r} declares no column: declare the columns your function "
            'returns as DDL, e.g. "word string, n long"'
        )
    return struct


def check_key(source: Any, key: str | None) -> None:
    """Refuse a ``key`` that names no column of ``source`` (None: the inputs are ``keys``)."""
    if source is None or key is None:
        return
    columns = tuple(source.columns)
    if key not in columns:  # by its exact name: the rounds tell the key from the other columns
        raise KeyColumnMissing(
            f"key={key!r} names no column of the source DataFrame (its columns: "
            f"{', '.join(columns)}): name the column that says which input each row belongs "
            'to, e.g. .withColumn("file", input_file()) and key="file"'
        )
    kind = source.schema[key].dataType.simpleString()
    if kind != "string":  # the rounds join it with the listed keys, which are strings
        raise InvalidArgument(
            f"key={key!r} is a column of type {kind}, and an input's key is a string: "
            f'cast it, e.g. source.withColumn("{key}", F.col("{key}").cast("string"))'
        )
