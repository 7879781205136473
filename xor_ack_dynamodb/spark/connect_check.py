"""Before the first round over Spark Connect: can the server's workers run the library at all?

A Spark Connect client pickles the library's stage functions by reference: the
Python that runs the tasks on the server's side must import ``xor_ack_dynamodb``
and what it needs (pyarrow, pandas, numpy, boto3).  :func:`check_server` runs one
small task there (a function pickled by value, so it runs even where the library
is missing) that tries those imports and says which Python it is; a missing
module, a Python that does not start, or another version of the library stops the
run at once (:class:`~.errors.Incurable`) with what to install, and where.
Once per session.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ConnectCheckFailed, Incurable
from .isolation import incurable, one_line
from .paths import PACKAGE, package_version

#: What the tasks import (the library, and what its stages need).
MODULES = ("xor_ack_dynamodb", "pyarrow", "pandas", "numpy", "boto3", "botocore")
WHERE = "the Spark Connect server's workers"
#: Runs of the check job before a failure that names nothing incurable stops the run, and
#: the wait after the first (seconds; doubled after the second).
PROBE_ATTEMPTS = 3
PROBE_WAIT = 1.0

_LOCK = threading.Lock()
_CHECKED: set[str] = set()

#: The probe, as source: compiled in a module namespace of its own so that it is pickled
#: by value (a function of an importable module is pickled by reference, and the point is
#: to run where the library may be missing).
_PROBE = """
def probe(batches):
    import importlib
    import socket
    import sys

    import pyarrow as pa

    for _ in batches:
        pass
    missing = []
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:
            missing.append(f"{name} ({type(exc).__name__}: {exc})")
    version = "unknown"
    try:
        from importlib import metadata

        version = metadata.version(PACKAGE)
    except Exception:
        pass
    yield pa.RecordBatch.from_pydict({
        "python": [sys.executable],
        "python_version": [sys.version.split()[0]],
        "host": [socket.gethostname()],
        "missing": ["; ".join(missing)],
        "version": [version],
    })
"""
_DDL = "python string, python_version string, host string, missing string, version string"


@dataclass(frozen=True)
class ServerPython:
    """The Python that runs the tasks on the server's side, as the probe found it."""

    python: str
    python_version: str
    host: str
    missing: str
    version: str


def _probe_function(modules: tuple[str, ...]) -> Any:
    namespace: dict[str, Any] = {
        "__name__": "__xor_ack_probe__",
        "MODULES": modules,
        "PACKAGE": PACKAGE,
    }
    exec(compile(_PROBE, "<xor-ack probe>", "exec"), namespace)
    return namespace["probe"]


def probe(
    spark: Any,
    modules: tuple[str, ...] = MODULES,
    *,
    sleep: Callable[[float], object] = time.sleep,
) -> ServerPython:
    """Run the probe in one task on ``spark``'s workers.

    A failure that names what cannot heal (a module, a Python, a version) is
    :class:`Incurable`; any other (the server unreachable for a moment, an executor lost)
    is tried again, ``PROBE_ATTEMPTS`` times in all, then :class:`ConnectCheckFailed`.
    """
    frame = spark.range(0, 1, 1, 1).mapInArrow(_probe_function(modules), _DDL)
    for attempt in range(1, PROBE_ATTEMPTS + 1):
        try:
            row = frame.collect()[0]
            break
        except Exception as exc:
            message = incurable(str(exc), ["-"], 0, WHERE)
            if message is not None:
                raise Incurable(message) from exc
            if attempt == PROBE_ATTEMPTS:
                raise ConnectCheckFailed(
                    f"{WHERE} could not run the library's check job, {PROBE_ATTEMPTS} times "
                    f"({one_line(str(exc))[:300]}); nothing was read or written: run again "
                    "once the server answers, and look at its log if this goes on"
                ) from exc
            sleep(PROBE_WAIT * attempt)
    return ServerPython(**{name: str(row[name]) for name in ServerPython.__dataclass_fields__})


def check_server(spark: Any, modules: tuple[str, ...] = MODULES) -> ServerPython | None:
    """Stop the run at once if the server's workers cannot run the library (once per session)."""
    session = str(getattr(spark, "session_id", id(spark)))
    with _LOCK:
        if session in _CHECKED and modules == MODULES:
            return None
    found = probe(spark, modules)
    where = f"{WHERE} ({found.python}, Python {found.python_version}, on {found.host})"
    if found.missing:
        raise Incurable(
            f"{where} cannot import {found.missing}: install them into that Python "
            f"(pip install {PACKAGE}{_pin()} pyarrow pandas), or point the server's "
            "spark.pyspark.python / PYSPARK_PYTHON at a Python that has them"
        )
    mine = package_version()
    if "unknown" not in (mine, found.version) and mine != found.version:
        raise Incurable(
            f"{where} has {PACKAGE} {found.version}, this client {mine}: install the same "
            f"version on both sides (pip install {PACKAGE}=={mine})"
        )
    with _LOCK:
        _CHECKED.add(session)
    return found


def _pin() -> str:
    version = package_version()
    return "" if version == "unknown" else f"=={version}"
