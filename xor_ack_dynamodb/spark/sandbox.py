"""The user's function for one input, inside a task: its failure caught, its crash contained.

:func:`user_rows` calls ``process(key, rows)`` and returns either the rows (a
``pyarrow.Table`` of the declared columns) or why the input's attempt failed:

- it raised: ``raised: TypeError: message (input key)``; ``InputRejected``: its own
  message, final;
- it returned something else than a table of the declared columns: ``bad output: ...``;
- run *isolated* (``fork``: a child process of the Python worker, the input's rows
  inherited, the result sent back as an Arrow stream over a pipe), it ended that
  process (``os._exit``, a signal, the kernel's out-of-memory killer):
  ``crashed: ... (exit status 1)``.  The Python worker, its task and every other
  input of the task live on.

An input runs isolated only when the driver asks (an input of a task that died in
the round before, ``isolation``): forking costs a few milliseconds per input.
"""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import InputRejected
from .isolation import bad_output, crashed, message_of, raised


@dataclass(frozen=True)
class Rows:
    """An input's rows (``table``), or why there are none (``failure``; ``final``: no retry)."""

    table: Any = None
    failure: str | None = None
    final: bool = False


def user_rows(
    process: Callable[[str, Any], Any],
    key: str,
    rows: Any,
    schema: Any,
    *,
    isolated: bool = False,
    before_fork: Callable[[], None] | None = None,
) -> Rows:
    """``process(key, rows)`` as a :class:`Rows`, never an exception of the function's."""
    if isolated and hasattr(os, "fork"):
        if before_fork is not None:
            before_fork()
        return _checked(_in_child(process, key, rows), key, schema)
    try:
        out = process(key, rows)
    except InputRejected as exc:
        return Rows(failure=message_of(exc), final=True)
    except (Exception, SystemExit, GeneratorExit) as exc:  # sys.exit(): argparse, click
        return Rows(failure=raised(key, exc))
    return _checked(Rows(table=out), key, schema)


def _checked(result: Rows, key: str, schema: Any) -> Rows:
    """The function's result as a table of the declared columns, or a ``bad output``."""
    import pyarrow as pa  # type: ignore[import-untyped]

    if result.failure is not None:
        return result
    out = result.table
    if isinstance(out, pa.RecordBatch):
        out = pa.Table.from_batches([out])
    if not isinstance(out, pa.Table):
        return Rows(
            failure=bad_output(key, f"the function returned {type(out).__name__}, not a table")
        )
    extra = [name for name in out.column_names if name not in schema.names]
    if extra:  # Spark's applyInPandas refuses them too: most often a misnamed column
        columns, them = ("column", "it") if len(extra) == 1 else ("columns", "them")
        declared = ", ".join(f"{field.name}: {field.type}" for field in schema)
        return Rows(
            failure=bad_output(
                key,
                f"the function returned the {columns} {', '.join(repr(n) for n in extra)}, "
                f"which the schema does not declare ({declared}): drop {them}, or declare {them}",
            )
        )
    try:
        return Rows(table=out.select(list(schema.names)).cast(schema))
    # pa.ArrowException covers ArrowInvalid, ArrowTypeError, ...; a null in a NOT NULL
    # column is a plain ValueError ("with null values to non-nullable"), which escaped the
    # sandbox and failed every input of the task with it
    except (KeyError, ValueError, TypeError, pa.ArrowException) as exc:
        return Rows(
            failure=bad_output(
                key,
                f"the function returned columns {out.column_names} "
                f"({', '.join(str(t) for t in out.schema.types)}); declared: {schema}"
                f" ({exc})",
            ).replace("\n", ", ")
        )


def _in_child(process: Callable[[str, Any], Any], key: str, rows: Any) -> Rows:
    """``process`` in a child process; its result (or its error) back over a pipe."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns on fork with threads alive
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        status = 0
        try:
            _child(process, key, rows, write_end)
        except BaseException:
            status = 70
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0 or not data:
        return Rows(failure=crashed(key, _how(code)))
    kind, payload = data[:1], data[1:]
    if kind == b"T":
        import pyarrow as pa

        with pa.ipc.open_stream(payload) as stream:
            return Rows(table=stream.read_all())
    text = payload.decode("utf-8", "replace")
    if kind == b"J":
        return Rows(failure=text, final=True)
    if kind == b"N":
        return Rows(failure=bad_output(key, f"the function returned {text}, not a table"))
    name, _, message = text.partition("\0")
    return Rows(failure=raised(key, (name, message)))


def _child(process: Callable[[str, Any], Any], key: str, rows: Any, fd: int) -> None:
    import pyarrow as pa

    with os.fdopen(fd, "wb") as pipe:
        try:
            out = process(key, rows)
        except InputRejected as exc:
            pipe.write(b"J" + message_of(exc).encode("utf-8", "replace"))
            return
        except BaseException as exc:
            pipe.write(b"E" + f"{type(exc).__name__}\0{message_of(exc)}".encode("utf-8", "replace"))
            return
        if isinstance(out, pa.RecordBatch):
            out = pa.Table.from_batches([out])
        if not isinstance(out, pa.Table):
            pipe.write(b"N" + type(out).__name__.encode())
            return
        pipe.write(b"T")
        with pa.ipc.new_stream(pipe, out.schema) as stream:
            stream.write_table(out)


def _how(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    if code == 0:
        return "exited without returning"
    return f"exit status {code}"
