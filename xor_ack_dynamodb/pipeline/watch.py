"""``xor-ack wordcount --watch``: count the files that arrive in INPUT, each tracked.

A Structured Streaming file source over INPUT (Spark's text reader, the file of
each line from ``_metadata.file_path``), run through the library's
:func:`~xor_ack_dynamodb.spark.track_stream`: each micro-batch's new files are
counted, tracked to completion (replayed if their chains do not reach zero) and
committed to ``OUTPUT/batch=N-RUN`` (CSV ``word,count`` of that batch's files).  The
stream's checkpoint is ``OUTPUT/_checkpoint``: the same command again resumes
where it stopped, never counting a file twice.  Each file's end is printed from
the library's typed events (``events.Acked`` / ``events.Failed``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import click

from ..cli.errors import RefusedUsage, UserError, explain
from ..cli.signals import stop_on_signals
from ..lifecycle import Acked, Failed
from ..spark.examples.wordcount import WordCountOptions
from ..spark.faults import FaultConfig
from ..spark.paths import STAGING_MARK, is_remote, local_path, qualified
from ..spark.stream_marks import BATCH_PREFIX
from .chains_table import _tracker
from .chains_table import single_writes as one_request_each
from .errors import InputMissing, NameUnwatchable, OutputNotOurs, Refused
from .interruption import Interrupted, ending, in_one_line, session_name
from .paths import check_folders, check_paths
from .progress import RichProgress, plural

#: The stream's checkpoint, inside OUTPUT (a name Spark's readers skip).
CHECKPOINT = "_checkpoint"
#: Seconds between two looks at the query (how soon Ctrl-C or its end is noticed).
POLL = 0.5
#: Seconds between two looks at INPUT for files that arrived with a name the stream cannot
#: read (Spark's listing skips them without a word).
NAMES_EVERY = 10.0


def check_watch_input(input_: str) -> None:
    """A local INPUT exists (it may be empty: the files it watches for arrive later)."""
    if is_remote(input_):
        return
    folder = local_path(input_)
    if not os.path.lexists(folder):
        raise InputMissing(
            f"input {input_} does not exist: create the folder --watch watches, or give "
            "another INPUT"
        )
    if not os.path.exists(folder):
        raise InputMissing(f"input {input_} is a broken symbolic link: give a folder to watch")
    for path, why in unwatchable(input_):
        raise NameUnwatchable(
            f"{path} {why} (--watch would not count it): rename it, or count the folder "
            "without --watch"
        )


def unwatchable(input_: str) -> Iterator[tuple[str, str]]:
    """The files under a local INPUT that Spark's file source cannot read, and why: a ``:``
    in a name (Hadoop's Path refuses it, and the listing of every batch stops), a name
    that is not UTF-8 (the listing skips it: never counted, never told)."""
    if is_remote(input_):
        return
    for root, _, names in os.walk(local_path(input_)):
        for name in names:
            path = os.path.join(root, name)
            if ":" in name:
                yield path, "has a ':' in its name, which Spark's file source cannot read"
            elif not _utf8(path):
                shown = os.fsencode(path).decode("utf-8", "backslashreplace")
                yield shown, "has a name that is not UTF-8, which Spark's file source skips"


def _utf8(path: str) -> bool:
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def check_watch_output(output: str) -> None:
    """OUTPUT is absent, empty, or what an earlier ``--watch`` wrote (batches, checkpoint)."""
    if is_remote(output):
        return
    folder = local_path(output)
    if not os.path.isdir(folder):
        if os.path.lexists(folder):
            raise OutputNotOurs(f"output {output} is a file: choose a folder for --watch")
        return
    others = [n for n in sorted(os.listdir(folder)) if not _of_watch(n)]
    if others:
        raise OutputNotOurs(
            f"output {output} holds {others[0]!r}, which --watch did not write: choose an "
            "empty or new folder (or the OUTPUT of an earlier --watch, to resume it)"
        )


def _of_watch(name: str) -> bool:
    """A name ``--watch`` gives an entry of OUTPUT: the checkpoint, a batch's counts, or the
    hidden staging folder of a batch whose run was killed before its commit (its rows,
    left; Spark's readers skip it, and the batch runs again under another run id)."""
    staged = name.startswith(f".{BATCH_PREFIX}") and f".{STAGING_MARK}" in name
    return name == CHECKPOINT or name.startswith(BATCH_PREFIX) or staged


@dataclass
class Watch:
    """What the stream did so far (for the closing line, also after Ctrl-C)."""

    acked: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)

    def event(self, say: Callable[[str], None]) -> Callable[[Acked | Failed], None]:
        def tell(event: Acked | Failed) -> None:
            key = _input_of(event.tag)
            if isinstance(event, Acked):
                self.acked.add(key)
                self.failed.pop(key, None)
                say(f"acked {key}")
            else:
                self.failed[key] = event.reason
                say(f"not acked {key}: {event.reason}")

        return tell

    def tell_unwatchable(self, input_: str, say: Callable[[str], None]) -> None:
        """Tell each file that arrived with a name the stream cannot read (once): failed."""
        for path, why in unwatchable(input_):
            if path not in self.failed:
                self.failed[path] = why
                say(f"not counted {path}: it {why}; rename it")


def _input_of(tag: str) -> str:
    """The input of a chain ``RUN/INPUT#ROUND``."""
    return tag.split("/", 1)[-1].rsplit("#", 1)[0]


def watch(
    spark: Any,
    options: WordCountOptions,
    *,
    available_now: bool,
    state: Watch,
    say: Callable[[str], None],
) -> None:
    """Run the stream until it ends (``available_now``) or the process is interrupted."""
    from ..spark import track_stream
    from ..spark.examples.wordcount import (
        SCHEMA,
        count_file,
        counts_sink,
        text_lines,
        tracking_options,
    )

    query = track_stream(
        text_lines(spark.readStream, options.input),
        count_file,
        SCHEMA,
        counts_sink(options.output, options.output_partitions),
        key="file",
        checkpoint=f"{qualified(options.output)}/{CHECKPOINT}",
        available_now=available_now,
        on_event=state.event(say),
        # A file that fails is told (and the command exits 1 at the end); the others go on.
        stop_on_failure=False,
        **tracking_options(options),
    )
    # SIGINT / SIGTERM only set an event here: raised inside a py4j call (the main thread
    # spends its time in awaitTermination) they would make py4j log a traceback.
    with stop_on_signals() as stop:
        looked = time.monotonic()
        try:
            while not stop.is_set() and not query.awaitTermination(POLL):
                if time.monotonic() - looked >= NAMES_EVERY:
                    state.tell_unwatchable(options.input, say)
                    looked = time.monotonic()
        except Exception as exc:  # Spark's wrapper: what the batch raised is inside it
            raise UserError(stopped_by(exc)) from exc
        finally:
            if query.isActive:
                query.stop()
        state.tell_unwatchable(options.input, say)
    if stop.is_set():
        raise Interrupted(stop.signal)
    error = query.exception()
    if error is not None:
        raise UserError(stopped_by(error))


#: A Python exception's last line (``module.Name: message``) in Spark's text of a query
#: that a micro-batch stopped.
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Z]\w*): (\S.*)")


def stopped_by(error: BaseException) -> str:
    """The error a micro-batch raised, from Spark's message of the query it stopped: the
    last exception of the last Python traceback in it (its wrapper's first 300
    characters say only that "the Python Proxy" raised one)."""
    text = str(error).split("=== Streaming Query ===")[0]
    marker = "Traceback (most recent call last):"
    if marker in text:
        for line in reversed(text.split(marker)[-1].splitlines()):
            raised = _RAISED.match(line.strip())
            if raised is not None and raised.group(1) != "SQLSTATE":
                return f"{raised.group(1)}: {raised.group(2)}"
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return f"the stream stopped: {first[:300]}"


def run_watch(
    ctx: click.Context,
    input_: str,
    output: str,
    master: str | None,
    remote: str | None,
    faults: FaultConfig,
    run: tuple[int | None, int, float, int, bool],
    available_now: bool,
    verbose: bool,
    progress: RichProgress,
    where: tuple[str | None, str | None, str | None, str, str],
) -> None:
    """``xor-ack wordcount --watch``: the stream, its lines, its end (Ctrl-C: exit 130).

    ``run``: --partitions, --max-attempts, --timeout, --output-partitions, --single-writes.
    """
    state = Watch()

    def interrupted(exc: KeyboardInterrupt) -> str:
        name = exc.args[0] if isinstance(exc, Interrupted) and exc.args else "SIGINT"
        # Acked is not committed: a micro-batch cut short after its acks wrote nothing.
        return (
            f"interrupted ({name}): {plural(len(state.acked), 'file')} acked, the completed "
            f"micro-batches in {output}; the same command resumes from its checkpoint"
        )

    with ending(verbose, interrupted):  # walking a large INPUT takes a while: Ctrl-C is 130
        try:
            check_paths(input_, output)
            check_watch_input(input_)
            check_watch_output(output)
            check_folders(output, None)
        except Refused as exc:
            raise RefusedUsage(explain(exc) or str(exc)) from exc
    endpoint_url, table, region, partition_key, backend = where
    partitions, max_attempts, timeout, output_partitions, single_writes = run
    with (
        ending(verbose, interrupted) as reinstall,
        _tracker(ctx, endpoint_url, table, region, partition_key, 32, backend, progress) as tracker,
    ):
        from .spark import start_session, stop_session

        progress.step(f"starting Spark ({session_name(master, remote)})")
        spark = None
        try:
            with in_one_line(verbose):  # said while the JVM that knows Spark's errors runs
                spark = start_session(master, remote, faults.enabled, verbose)
                reinstall()
                progress.step(f"watching {input_} (Ctrl-C stops)")
                if single_writes:
                    tracker = one_request_each(tracker)
                options = WordCountOptions(
                    input_, output, tracker=tracker, faults=faults, partitions=partitions,
                    max_attempts=max_attempts, timeout=timeout,
                    output_partitions=output_partitions,
                )  # fmt: skip
                watch(spark, options, available_now=available_now, state=state, say=progress.step)
        finally:
            stop_session(spark)
    progress.step(
        f"{plural(len(state.acked), 'file')} acked, {len(state.failed)} failed; counts per "
        f"batch in {output}/batch=*"
    )
    if state.failed:
        raise UserError(f"{plural(len(state.failed), 'file')} failed: {sorted(state.failed)[0]}")
