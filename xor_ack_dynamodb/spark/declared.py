"""What a job declares, checked against Spark before anything runs: its rows' schema (DDL)
and the column of its source that names each row's input."""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidArgument, KeyColumnMissing, ReservedColumn, SchemaInvalid
from .ledger import RESERVED
from .output import said


def schema_ddl(schema: Any) -> Any:
    """``schema`` as DDL: a ``StructType`` (what ``mapInPandas`` and ``createDataFrame`` also
    take) as its columns' DDL; anything else as given (:func:`schema_struct` checks it)."""
    from pyspark.sql.types import StructType

    if isinstance(schema, StructType):
        if not schema.fields:
            raise SchemaInvalid(
                "schema=StructType([]) declares no column: declare the columns your "
                'function returns, e.g. "word string, n long"'
            )
        return schema.toDDL()
    return schema


def schema_struct(spark: Any, ddl: str) -> Any:
    """The ``StructType`` of the rows ``ddl`` declares, or :class:`SchemaInvalid`."""
    from pyspark.errors import AnalysisException, ParseException

    if not isinstance(ddl, str):
        raise SchemaInvalid(
            f"schema={ddl!r} is neither DDL nor a StructType: declare the columns your "
            'function returns, e.g. "word string, n long"'
        )
    if ddl.strip()[:7].lower() == "struct<":  # Spark reads it, but not with columns after it
        raise SchemaInvalid(
            f"the schema {ddl!r} is a struct type, and the rounds add their own columns to "
            'the declared ones: declare the columns as DDL, e.g. "key string, n bigint" '
            "(or give the StructType itself)"
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
    names = [field.name.lower() for field in struct.fields]  # Spark's names: any case
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # the output's write refused it, after every round had run
        raise SchemaInvalid(
            f"the schema {ddl!r} declares the column {twice[0]!r} twice: give each column "
            "its own name"
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


def short_repr(value: Any) -> str:
    """``repr(value)``, cut to 60 characters (a Column's or a DataFrame's is long)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


#: A year-month interval's type name, alone or inside a struct, array or map.
_MONTHS = re.compile(r"interval (year|month)")


def check_key(source: Any, key: str | None, *, stream: bool = False) -> None:
    """Refuse a ``key`` that names no column of ``source`` (None: the inputs are ``keys``),
    and a streaming ``source`` unless it is ``track_stream``'s (``stream``)."""
    if source is None:
        return
    if not hasattr(source, "columns") or not hasattr(source, "schema"):
        raise InvalidArgument(
            f"source={short_repr(source)} is not a DataFrame: give the DataFrame of the inputs'"
            " rows (and key= its column naming each row's input), or keys= and no source"
        )
    if not stream and getattr(source, "isStreaming", False) is True:  # no round writes it
        raise InvalidArgument(
            "source= is a streaming DataFrame (spark.readStream...), which track() cannot run"
            " in rounds: give it to track_stream(stream, ...), or read the inputs with"
            " spark.read for one run"
        )
    columns = tuple(source.columns)
    folded = [name.lower() for name in columns]  # Spark's names are case-insensitive
    twice = next((n for n, low in zip(columns, folded, strict=True) if folded.count(low) > 1), None)
    if twice is not None:  # the rounds' join and union carry the columns by name
        raise InvalidArgument(
            f"the source DataFrame has two columns named {twice!r} (a join keeps both "
            "sides'): drop or rename one before track(), e.g. a.join(b, ...).drop(b[name])"
        )
    dotted = next((name for name in columns if "." in name and name != key), None)
    if dotted is not None:  # Spark's mapInArrow reads "a.b" as field b of a column a
        raise InvalidArgument(
            f"the source DataFrame's column {dotted!r} has a '.' in its name, which the "
            "rounds cannot carry to the function: rename it before track(), e.g. "
            f"source.withColumnRenamed({dotted!r}, {dotted.replace('.', '_')!r})"
        )
    months = next(
        (f for f in source.schema.fields if _MONTHS.search(f.dataType.simpleString())), None
    )
    if months is not None:  # Arrow's month intervals: PySpark's worker cannot read them
        raise InvalidArgument(
            f"the source DataFrame's column {months.name!r} holds year-month intervals "
            f"({months.dataType.simpleString()}), which PySpark cannot hand the function: "
            f"cast it before track(), e.g. source.withColumn({months.name!r}, "
            f"F.col({months.name!r}).cast('string'))"
        )
    if key is None:
        return
    if key.lower().startswith(RESERVED):  # the rounds add their own _xa_input beside it
        raise ReservedColumn(
            f"key={key!r} starts with {RESERVED!r}, which the library keeps for the columns "
            "it adds to the rounds' rows: rename the column before track(), e.g. "
            f'source.withColumnRenamed({key!r}, "input")'
        )
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
