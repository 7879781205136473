"""``track()``'s arguments checked before anything runs: what it takes, by its own names.

A wrong argument (a function Spark cannot run, an option of the wrong type) is an
:class:`InvalidArgument` naming it, before the first chain is written, never a
``TypeError`` from deep inside the run or a failure of every input on the workers.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

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
