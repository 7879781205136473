"""A catalog table as the output: ``Sink(table="db.name")``, each acked input's rows there once.

The rounds stage their rows in a hidden folder beside the table's database
(``LOCATION/.xor-ack-RUN``; the warehouse folder when the catalog says no
location, or when the table's folder is its database's; ``work_dir`` when given), on
the side where Spark runs.  After the last
round the acked rounds' rows go to the table in **one** write through the
session's catalog: inserted (``insertInto``, by the table's own column order, so
its format, whatever it is, takes them: a v1 table rejects
``DataFrameWriterV2.append``), or created with the sink's format when the table
does not exist (``saveAsTable``).  One Spark job commits them all or none, so a
replayed input (only its acked round's rows are read) and a re-run task attempt
(Spark's committer keeps one) are there once.  ``overwrite=True`` replaces the
table's rows (``insertInto(overwrite=True)``).  As with a folder, the table is
changed only when every input acked, unless ``Sink(partial=True)``: a second run
of the inputs that failed then adds what the first did not, and nothing twice.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from . import output
from .columns import named
from .commit import Counts, Written, refuse_emptying, refuse_staged, resolver
from .errors import (
    DatabaseMissing,
    InvalidArgument,
    OutputExists,
    OutputUnwritable,
    TableColumnsDiffer,
)
from .files import Files
from .paths import is_inside, literal, real_path
from .sink import Sink
from .table_names import refuse_name, session_name


class TableTarget:
    """A table output: rows staged beside its database, one catalog write at the end."""

    def __init__(
        self, spark: Any, sink: Sink, run_id: str, work_dir: str | None, report: str | None = None
    ) -> None:
        assert sink.table is not None
        self.report = report
        self.spark = spark
        self.sink = sink
        self.table: str = sink.table
        self.files = Files(spark)
        self.run_id = run_id
        self.work_dir = resolver(spark)(work_dir, "the work folder") if work_dir else None
        self._stage_in(self.work_dir or self._beside())
        #: Set while an ``overwrite`` replaces the table's rows: a failure then may have
        #: left it with some or none of them (said by the run's error).
        self.replacing = False

    def _stage_in(self, base: str) -> None:
        """Stage the rounds' rows in ``base/.xor-ack-RUN``."""
        self.staging = f"{base.rstrip('/')}/.xor-ack-{self.run_id}"
        self.rows_root = f"{self.staging}/rows"

    def _beside(self) -> str:
        """The table's database folder (the warehouse folder if the catalog names none)."""
        parts = self.table.split(".")
        database = ".".join(parts[:-1]) or self.spark.catalog.currentDatabase()
        try:
            location = self.spark.catalog.getDatabase(database).locationUri
        except Exception:  # a catalog without locations (e.g. a REST catalog)
            location = None
        if not location:  # a path as given, not a URI
            return str(self.spark.conf.get("spark.sql.warehouse.dir"))
        # The catalog gives a URI, percent-encoded ("my%20db"): the folder is "my db".
        return urllib.parse.unquote(str(location))

    def _location(self, exists: bool) -> str | None:
        """The table's folder: the catalog's word for an existing table, the database's
        folder and the table's name for a new one (None when the catalog cannot say)."""
        if not exists:
            given = self._path_option()
            if given is not None:  # an external table: its own folder
                return str(resolver(self.spark)(given, "the table's path option"))
            name = self.table.split(".")[-1].strip("`")
            return f"{self._beside().rstrip('/')}/{name.lower()}"
        try:
            rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {self.table}").collect()
        except Exception:  # a catalog that cannot say
            return None
        # The columns come first (one may be named "Location"), the table's details after
        # their heading: its folder is a row of those.
        names = [str(row[0]).strip() for row in rows]
        heading = "# Detailed Table Information"
        details = rows[names.index(heading) + 1 :] if heading in names else []
        found = [str(row[1]) for row in details if row[0] == "Location" and row[1]]
        return urllib.parse.unquote(found[0]) if found else None

    def _refuse_folder_left(self, location: str | None) -> None:
        """A new table's folder (``location``) that holds files (a table dropped by
        another tool, a ``saveAsTable`` that failed): ``saveAsTable`` refuses it
        (LOCATION_ALREADY_EXISTS), at the commit, after every chain was written."""
        found = self.files.listing(location) if location else None
        if found is None or (found.is_dir and not found.names):
            return
        if self._path_option() is not None:  # an external table: Spark's CTAS refuses it too
            raise OutputExists(
                f"Sink(table={self.table!r}, options={{'path': ...}}): the table does not "
                f"exist, and its folder {location} holds files, which Spark will not create "
                "the table over (nor would this library replace them): give an empty or new "
                "folder",
                output=str(location),
            )
        raise OutputExists(
            f"Sink(table={self.table!r}): the table does not exist, but its folder "
            f"{location} does and holds files (left by a dropped table?), which Spark "
            "will not create the table over: move them away, or name another table",
            output=str(location),
        )

    def _path_option(self) -> str | None:
        """A new table's ``path`` option: the folder of an external table."""
        found = [v for k, v in self.sink.options.items() if k.lower() == "path"]
        return str(found[0]) if found else None

    def _refuse_staging_inside(self, location: str | None) -> None:
        """Rows staged in the table's folder (``location``): an overwrite empties that
        folder before its write job reads the rows staged there (both lost), and a new
        table's ``saveAsTable`` refuses a folder that exists, after every chain was
        written.  A ``work_dir`` there is refused; without one, a table whose folder is its
        database's (where the rows are staged by default) has them staged in the warehouse
        folder instead, or, that one inside the table's too, is refused."""
        if not location or not is_inside(real_path(self.staging), real_path(location)):
            return
        if self.work_dir:
            raise InvalidArgument(
                f"work_dir={self.work_dir!r} is at or inside the folder of "
                f"Sink(table={self.table!r}) ({location}): the run stages its rows there; "
                "give a work folder outside the table's"
            )
        warehouse = str(self.spark.conf.get("spark.sql.warehouse.dir"))
        if not is_inside(real_path(warehouse), real_path(location)):
            self._stage_in(warehouse)
            return
        raise InvalidArgument(
            f"Sink(table={self.table!r}): the table's folder ({location}) holds its database's "
            "folder and the warehouse, where the run would stage its rows (an overwrite "
            "empties it before reading them); nothing was written: give a work folder "
            "outside the table's (track(..., work_dir=...))"
        )

    def _refuse_report_inside(self, location: str | None) -> None:
        """A report in the table's folder: Spark reads it as one of the table's files (each
        later read of the table fails), or an overwrite empties the folder, report and all."""
        if self.report and location and is_inside(real_path(self.report), real_path(location)):
            raise InvalidArgument(
                f"report={self.report!r} is at or inside the folder of Sink(table="
                f"{self.table!r}) ({location}), which holds the table's files and nothing "
                "else: give a path outside it"
            )

    def check(self, struct: Any, *, probe: bool = True) -> None:
        """Refuse before the first chain what the commit could not write: a table in a
        database the catalog lacks, an existing table whose columns are not the output's
        (``struct``, the declared schema, through ``finish``), a new one partitioned by a
        column the output lacks, a new one whose name, format, options or partitioning
        ``saveAsTable`` refuses (``probe``: tried with no rows, as a scratch table of the
        same database, dropped after)."""
        exists = self.exists()
        if not exists:
            refuse_name(self.spark, self.table)
        # where staging (or the report) can clash with the table's folder
        asked = self.work_dir or not exists or self.sink.overwrite or self.report
        location = self._location(exists) if asked else None
        self._refuse_staging_inside(location)
        self._refuse_report_inside(location)
        refuse_staged(self.files, self.rows_root, self.run_id)
        out = output.schema(self.spark, struct, self.sink)
        columns = tuple(field.name for field in out.fields)
        if not exists:
            database = ".".join(self.table.split(".")[:-1])
            if database and not self.spark.catalog.databaseExists(database):
                raise DatabaseMissing(
                    f"Sink(table={self.table!r}): the catalog has no database {database!r}: "
                    f"create it (CREATE DATABASE {database}) or name a table in one it has"
                )
            output.check_partitions(self.spark, columns, self.sink)  # saveAsTable's
            self._refuse_folder_left(location)
            if probe:
                self._probe(struct)
            return
        kind = self._kind()
        if kind is not None:  # insertInto refuses one (EXPECT_TABLE_NOT_VIEW) at the commit
            raise TableColumnsDiffer(
                f"Sink(table={self.table!r}) is a {kind}, which takes no rows: name a table"
            )
        existing = self.spark.table(self.table).columns
        if output.folded(self.spark, existing) != output.folded(self.spark, columns):
            raise TableColumnsDiffer(
                f"Sink(table={self.table!r}): the table has the columns {', '.join(existing)}, "
                f"the output {', '.join(columns)}: declare the table's columns (through "
                "Sink(finish=...) if need be), or name another table"
            )
        types = {output.folded(self.spark, [f.name])[0]: f.dataType for f in out.fields}
        refused = []
        for field in self.spark.table(self.table).schema.fields:
            given = types[output.folded(self.spark, [field.name])[0]]
            if not takes(field.dataType, given):
                refused.append(
                    f"{field.name} {field.dataType.simpleString()} <- {given.simpleString()}"
                )
        if refused:  # insertInto would refuse them at the commit, after every chain acked
            raise TableColumnsDiffer(
                f"Sink(table={self.table!r}): the table's column types cannot take the "
                f"output's ({'; '.join(refused)}): declare the table's types (or cast to "
                "them in Sink(finish=...)), or name another table"
            )

    def exists(self) -> bool:
        try:
            return bool(self.spark.catalog.tableExists(self.table))
        except Exception as exc:  # a catalog or namespace the session does not have
            raise DatabaseMissing(
                f"Sink(table={self.table!r}): the session's catalog cannot look it up "
                f"({output.said(exc)}): name a table as database.table, or catalog.database."
                "table with a catalog the session has (spark.sql.catalog.*)"
            ) from exc

    def _probe(self, struct: Any) -> None:
        """``saveAsTable`` of no rows, shaped as the commit's, to a scratch table beside the
        new one (its own folder, not the sink's ``path``), dropped after: what Spark refuses
        in a new table (a format it has not, every column a partition, a type the format
        cannot hold) is refused before the first chain, not at the commit."""
        sink = self.sink
        plain = sink.format.lower() in output.WRITES_EVERY_COLUMN
        if plain and not sink.options and not sink.partition_by:
            return
        name = "xor_ack_probe_" + session_name(self.run_id)
        scratch = ".".join([*self.table.split(".")[:-1], name])
        if self.spark.catalog.tableExists(scratch):
            return  # not this run's: left as it is
        options = {k: v for k, v in sink.options.items() if k.lower() != "path"}
        rows = output.shaped(self.spark.createDataFrame([], struct), sink)
        writer = rows.write.format(sink.format).options(**options)
        if sink.partition_by:
            writer = writer.partitionBy(*sink.partition_by)
        try:
            writer.saveAsTable(scratch)
        except Exception as exc:
            raise OutputUnwritable(
                f"Spark cannot create Sink(table={self.table!r}, format={sink.format!r}, "
                f"options={sink.options!r}, partition_by={sink.partition_by!r}) (tried with "
                f"no rows before the first chain): {output.said(exc)}; fix the sink, or "
                "declare columns its format can hold"
            ) from exc
        finally:
            self.spark.sql(f"DROP TABLE IF EXISTS {scratch}")
            self.files.delete(f"{self._beside().rstrip('/')}/{scratch.split('.')[-1]}")

    def _kind(self) -> str | None:
        """ "view" or "temporary view" if the name is one (no table to write), else None."""
        try:
            found = self.spark.catalog.getTable(self.table)
        except Exception:  # a catalog that cannot say: insertInto will
            return None
        if getattr(found, "isTemporary", False):
            return "temporary view"
        return "view" if str(getattr(found, "tableType", "")).upper() == "VIEW" else None

    def commit(self, rows: Any, counts: Counts, run_id: str) -> Written:
        if not counts.complete and not self.sink.partial:
            return "kept"
        out = output.shaped(rows, self.sink)
        if self.exists():  # by the table's own column order: its format takes them as it is
            existing = self.spark.table(self.table)
            if self.sink.overwrite and counts.inputs == 0 and not existing.isEmpty():
                refuse_emptying(counts, f"the rows of table {self.table}")
            columns, limits = existing.columns, _lengths(existing.schema)
            ordered = out.select(*map(named, columns))
            if self.sink.overwrite:
                # Spark deletes the table's files before its write job runs: the rows are
                # made first (finish, and every expression that can fail on them), so that
                # the table is touched only by a copy of rows already written.
                made = f"{self.staging}/output"
                ordered.write.parquet(made)
                ordered = self.spark.read.parquet(literal(made))
            if limits:  # Spark checks them only in the insert, after emptying the table
                _check_lengths(ordered, limits)
            if self.sink.overwrite:
                self.replacing = True
            ordered.write.insertInto(self.table, overwrite=self.sink.overwrite)
            self.replacing = False
        else:
            writer = out.write.format(self.sink.format).options(**self.sink.options)
            if self.sink.partition_by:
                writer = writer.partitionBy(*self.sink.partition_by)
            writer.saveAsTable(self.table)
        return "complete" if counts.complete else "partial"

    def cleanup(self) -> None:
        self.files.delete(self.staging)


#: A column's declared ``char(n)`` / ``varchar(n)`` (Spark reads it as a ``string`` whose
#: metadata keeps the declaration).
_CHAR_VARCHAR = re.compile(r"(?:var)?char\((\d+)\)")


def _lengths(schema: Any) -> dict[str, tuple[str, int]]:
    """The table's ``char(n)``/``varchar(n)`` columns: name -> (declared type, n)."""
    found = {}
    for field in schema.fields:
        declared = str(
            (field.metadata or {}).get("__CHAR_VARCHAR_TYPE_STRING")
            or field.dataType.simpleString()
        )
        length = _CHAR_VARCHAR.fullmatch(declared)
        if length is not None:
            found[field.name] = (declared, int(length.group(1)))
    return found


def _check_lengths(rows: Any, limits: dict[str, tuple[str, int]]) -> None:
    """A string longer than its column's ``char(n)``/``varchar(n)``: refused before the
    table is touched (one Spark job over the rows)."""
    from pyspark.sql import functions as F

    # Spark drops trailing spaces past n as it writes, and refuses any other character
    longest = rows.select(
        *(F.max(F.length(F.rtrim(named(name)))).alias(f"c{i}") for i, name in enumerate(limits))
    ).first()
    for i, (name, (declared, most)) in enumerate(limits.items()):
        found = longest[f"c{i}"] if longest is not None else None
        if found is not None and found > most:
            raise ValueError(
                f"[EXCEED_LIMIT_LENGTH] the table's column {name} is {declared}, and the "
                f"output holds strings of {found} characters: cut them (Sink(finish=...)), "
                "or widen the column"
            )


#: Integral types by width: a narrower one goes into a wider one unchanged.
_INTEGRAL = {"tinyint": 1, "smallint": 2, "int": 3, "bigint": 4}
#: Digits before the point an integral type needs in a decimal.
_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def takes(table: Any, out: Any) -> bool:
    """Does a table column of type ``table`` take the output's ``out`` values unchanged (the
    same type, or a wider one: what Spark's store assignment does without loss)?"""
    a, b = table.simpleString(), out.simpleString()
    if a == b:
        return True
    if a in _INTEGRAL and b in _INTEGRAL:
        return _INTEGRAL[b] <= _INTEGRAL[a]
    if a == "double" and b in ("float", "tinyint", "smallint", "int"):
        return True
    if a.startswith(("varchar(", "char(")) and b == "string":
        return True  # the length is checked by Spark as it writes each value
    if a == "timestamp" and b == "date":
        return True
    wide = _DECIMAL.fullmatch(a)
    if wide is not None:
        whole, scale = int(wide.group(1)) - int(wide.group(2)), int(wide.group(2))
        narrow = _DECIMAL.fullmatch(b)
        if narrow is not None:
            return int(narrow.group(2)) <= scale and (
                int(narrow.group(1)) - int(narrow.group(2)) <= whole
            )
        return b in _DIGITS and _DIGITS[b] <= whole
    return False
