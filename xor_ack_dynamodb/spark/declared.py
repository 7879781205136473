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
    # ParseException, AnalysisException; and what Spark raises on a type it parses and
    # cannot make a frame of (char(3) is an internal error of its own)
    except Exception as exc:
        if not isinstance(exc, (ParseException, AnalysisException)) and not _spark_error(exc):
            raise
        raise SchemaInvalid(
            f"the schema {ddl!r} is not one Spark reads ({said(exc)}): declare the columns "
            'your function returns as DDL, e.g. "word string, n long"'
        ) from exc
    if not struct.fields:
        raise SchemaInvalid(
            f"the schema {ddl!r} declares no column: declare the columns your function "
            'returns as DDL, e.g. "word string, n long"'
        )
    try:  # the rounds carry the rows as Arrow tables
        from pyspark.sql.pandas.types import to_arrow_schema

        to_arrow_schema(struct)
    except Exception as exc:
        raise SchemaInvalid(
            f"the schema {ddl!r} has a column type the rows cannot be carried in (Arrow: "
            f"{said(exc)}): declare another type (e.g. a string or a long for an interval)"
        ) from exc
    return struct


def _spark_error(exc: BaseException) -> bool:
    """An error of Spark's (PySpark's own, or the JVM's through Py4J), not of this code."""
    module = type(exc).__module__
    return module.startswith(("pyspark", "py4j"))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def check_key(source: Any, key: str | None) -> None:
    """Refuse a ``key`` that names no column of ``source`` (None: the inputs are ``keys``)."""
    if source is None:
        return
    if not hasattr(source, "columns") or not hasattr(source, "schema"):
        raise InvalidArgument(
            f"source={_short(source)} is not a DataFrame: give the DataFrame of the inputs'"
            " rows (and key= its column naming each row's input), or keys= and no source"
        )
    if key is None:
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
