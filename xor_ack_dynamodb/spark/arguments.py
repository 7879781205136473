"""``track()``'s arguments checked before anything runs: what it takes, by its own names.

A wrong argument (a function Spark cannot run, an option of the wrong type) is an
:class:`InvalidArgument` naming it, before the first chain is written, never a
``TypeError`` from deep inside the run or a failure of every input on the workers.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Any

from .declared import short_repr
from .errors import InvalidArgument


def check_process(process: Any) -> None:
    """Refuse a ``process`` that cannot run as ``process(key, rows)`` on the workers."""
    if not callable(process):
        raise InvalidArgument(
            f"process={process!r} is not callable: give a function process(key, rows) "
            "that returns a pyarrow.Table of the schema's columns"
        )
    try:
        signature = inspect.signature(process)
    except (TypeError, ValueError):  # a builtin without one: called as it is
        signature = None
    if signature is not None:
        try:
            signature.bind("key", None)
        except TypeError as exc:
            raise InvalidArgument(
                f"process={_name(process)} takes {signature}, but is called as "
                f"process(key, rows) ({exc}): give a function of two arguments"
            ) from exc
    from pyspark import cloudpickle

    try:
        cloudpickle.dumps(process)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise InvalidArgument(
            f"process={_name(process)} cannot be shipped to the workers "
            f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}): "
            "it must not use the SparkSession, a DataFrame or the SparkContext (they live on "
            "the driver only), nor hold a lock, a file or a client; read inputs inside it"
        ) from exc


def _article(value: Any) -> str:
    name = type(value).__name__
    return "None" if value is None else f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _name(process: Any) -> str:
    return getattr(process, "__qualname__", None) or repr(process)


def check_keys(keys: Any) -> Sequence[str]:
    """``keys`` as given when it is a collection of strings (a list, a tuple, ...), or
    :class:`InvalidArgument`: a single string is not its characters, None is no input's
    name, and an int or bytes would name its input by how Python prints it."""
    if isinstance(keys, str | bytes):
        raise InvalidArgument(
            f"keys={keys!r} is one string: give the inputs as a list of strings, "
            f"e.g. keys=[{keys!r}]"
        )
    if hasattr(keys, "schema") and hasattr(keys, "columns"):  # a DataFrame (either API)
        raise InvalidArgument(
            "keys= is a DataFrame: give it as source=..., with key='COLUMN' naming the "
            "column whose values are the inputs' keys (its rows are then each input's rows)"
        )
    if not isinstance(keys, list | tuple):
        try:
            keys = list(keys)
        except TypeError as exc:
            raise InvalidArgument(
                f"keys={keys!r} is not a collection: give the inputs as a list of strings"
            ) from exc
    for key in keys:
        if not isinstance(key, str):
            raise InvalidArgument(
                f"keys=[..., {key!r} ({_article(key)}), ...]: each input's key must be a string "
                "(it names the input's chain and is what process(key, rows) gets): convert "
                "them, e.g. keys=[str(k) for k in ...], and leave out the ones that are None"
            )
    checked: Sequence[str] = keys
    return checked


#: ``track()``'s options that count something (None: the default, where it has one).
COUNTS = ("max_attempts", "max_errors", "page_size", "input_tasks", "partitions")
#: The most partitions Spark takes (a Java int).
MAX_PARTITIONS = 2**31 - 1
#: The counts with a most: Spark's partitions are a Java int, a page is sliced by Python.
MOST = {"partitions": MAX_PARTITIONS, "page_size": sys.maxsize}


def check_options(spec: Any) -> None:
    """Refuse an option of a :class:`~.job_spec.JobSpec` whose type ``track()`` cannot take
    (a count that is no whole number, a path that is no string, ...), by its name."""
    from .faults import FaultConfig
    from .sink import Sink
    from .tracker import TrackerConfig

    if not isinstance(spec.sink, Sink):
        raise InvalidArgument(
            f"sink={spec.sink!r} is not a Sink: give Sink(path=...) for a folder "
            "or Sink(table=...) for a catalog table"
        )
    for name in COUNTS:
        value = getattr(spec, name)
        if value is None and name in ("input_tasks", "partitions"):
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(f"{name}={value!r}: give a whole number >= 1")
    for name, most in MOST.items():
        value = getattr(spec, name)
        if value is not None and value > most:
            raise InvalidArgument(f"{name}={value!r}: give a whole number of at most {most:,}")
    if spec.partitions is not None and spec.partitions < 1:
        raise InvalidArgument(
            f"partitions={spec.partitions!r}: give a whole number >= 1, or None for no shuffle"
        )
    if spec.key is not None and not isinstance(spec.key, str):  # a Column: bool() raises
        raise InvalidArgument(
            f"key= takes the name of a column of source, not {type(spec.key).__name__} "
            f"{short_repr(spec.key)}: add it as a column and name it, e.g. "
            'source.withColumn("file", input_file()) and key="file"'
        )
    for name in ("round_timeout", "chain_timeout"):
        seconds = getattr(spec, name)
        if seconds is not None and not _number(seconds):
            raise InvalidArgument(
                f"{name}={seconds!r}: give a number of seconds > 0, or None for no limit"
            )
    if spec.run_id is not None and not isinstance(spec.run_id, str):
        raise InvalidArgument(
            f"run_id={spec.run_id!r}: give a string of letters, digits, '_', '-' and '.', "
            "or leave it out for a new one"
        )
    if spec.report_path is not None and not isinstance(spec.report_path, str):
        raise InvalidArgument(f"report={spec.report_path!r}: give a file's path, or None")
    if spec.tracker is not None and not isinstance(spec.tracker, TrackerConfig):
        raise InvalidArgument(
            f"tracker={spec.tracker!r} is not a TrackerConfig: give "
            "TrackerConfig(table=...), or name the table with table=..."
        )
    if spec.on_event is not None and not callable(spec.on_event):
        raise InvalidArgument(
            f"on_event={spec.on_event!r} is not callable: give a function that takes "
            "each input's Acked / Failed event, or None"
        )
    if not isinstance(spec.faults, FaultConfig):
        raise InvalidArgument(
            f"faults={spec.faults!r} is not a FaultConfig: give FaultConfig(...), or None"
        )


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)
