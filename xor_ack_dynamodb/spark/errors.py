"""Errors of the Spark library that a user can act on (all are :class:`SparkTrackingError`)."""

from __future__ import annotations

import warnings
from typing import ClassVar

from .. import errors
from ..errors import XorAckError


class SparkTrackingError(XorAckError):
    """A tracked Spark job cannot go on as asked; the message says why and what to do."""


class InvalidArgument(SparkTrackingError, errors.InvalidArgument):
    """An argument the call cannot take (``Sink()`` with neither a folder nor a table,
    ``page_size=0``, ``FaultConfig.rate(2)``, ...): the message names it.  Raised before
    anything is read or written.  Also the package's ``errors.InvalidArgument`` and a
    ``ValueError``, which is what earlier versions raised."""


class Refused(SparkTrackingError):
    """The run was refused before anything was read or written."""


class InputMissing(Refused):
    """The input folder does not exist (or is a broken symbolic link)."""


class InputEmpty(Refused):
    """No input to process: the input folder holds no file, or a run with no input would
    replace, with ``Sink(overwrite=True)``, an output (or a table's rows) that had some."""


class OutputExists(Refused):
    """The output exists and is not empty, and the sink was not asked to overwrite it
    (``Sink(overwrite=True)``).  ``output``: the path; ``is_file``: a file is there."""

    def __init__(self, message: str, output: str = "", is_file: bool = False) -> None:
        super().__init__(message)
        self.output = output
        self.is_file = is_file


class OutputUnusable(OutputExists):
    """The output is there but cannot be judged or replaced: a folder that cannot be listed
    (at any depth), or a symbolic link (the commit's rename would replace the link, not the
    folder it points to).  The message says which, and what to give instead."""


class OutputNotOurs(Refused):
    """Overwrite was asked, but the output is not a folder this library wrote (or holds more).

    ``output``: the path; ``extra``: the entries this library did not write (empty when
    there is no valid manifest at all)."""

    def __init__(self, message: str, output: str = "", extra: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.output = output
        self.extra = extra


class ReservedColumn(Refused):
    """A column of the schema is named as the library's own (``_xa_...``): the run is
    refused before any chain is written; rename that column."""


class RelativePath(Refused):
    """A relative path given over Spark Connect: the server would resolve it in its own
    working directory, not the client's; give an absolute path or a URI."""


class SchemaInvalid(Refused):
    """The schema given to ``track`` / ``track_stream`` is not a DDL string Spark reads (or
    declares no column)."""


class KeyColumnMissing(Refused):
    """``key=`` names no column of the ``source`` DataFrame."""


class FinishFailed(Refused):
    """The sink's ``finish`` fails on rows of the declared schema (tried on no rows, before
    the first chain): the commit would fail the same way after every input ran."""


class PartitionColumnMissing(Refused):
    """``Sink(partition_by=...)`` names a column the output (the declared schema, through
    ``finish``) does not have."""


class OutputUnwritable(Refused):
    """Spark cannot write the output as the sink asks (its ``format``, ``options``, or a
    column type the format lacks): found by writing no rows before the first chain."""


class DatabaseMissing(Refused):
    """``Sink(table="db.name")`` names a database the session's catalog does not have."""


class TableColumnsDiffer(Refused):
    """``Sink(table=...)`` names an existing table whose columns are not the output's (the
    declared schema's, through ``finish``): its rows could not be inserted."""


class ChainsTableMissing(Refused):
    """The chains' table (``table=`` / ``TrackerConfig(table=...)``) does not exist where
    the run looks for it: refused before any Spark job, nothing written."""


class TrackingNotConfigured(SparkTrackingError):
    """No chains table was named (argument, session conf or environment)."""


class RemoteFilesUnsupported(SparkTrackingError):
    """The Spark Connect server refused the library's file helper (a session artifact), so the
    commit's file-system steps cannot run where Spark runs; the message says why."""


class Incurable(SparkTrackingError):
    """A round failed every input with an error that no replay cures: the run stops after it.

    A module missing where the tasks run, a Python the executors cannot start, a function
    that returns no table for any input.  The message says what to install or fix and where
    (the client, the Spark Connect server, the workers); ``report`` is the run's report so far
    (None when the check before the first round failed).  ``output_at_fault``: the function
    returned no rows table for any input: the inputs' own results, not where the tasks run,
    are at fault (``track_stream(stop_on_failure=False)`` goes on past such a batch, unless
    ``inputs_left``: a later page of inputs was listed and never run).
    """

    def __init__(
        self,
        message: str,
        report: object | None = None,
        *,
        output_at_fault: bool = False,
        inputs_left: bool = False,
    ) -> None:
        super().__init__(message)
        self.report = report
        self.output_at_fault = output_at_fault
        self.inputs_left = inputs_left

    @property
    def inputs_at_fault(self) -> bool:
        """Did the inputs that failed fail for their own results, every input having run
        (what ``track_stream(stop_on_failure=False)`` goes on past)?"""
        return self.output_at_fault and not self.inputs_left


class ConnectCheckFailed(SparkTrackingError):
    """Over Spark Connect, the job that checks the server's workers can run the library
    failed each time it was tried, for a reason that names nothing to install (the server
    unreachable, an executor lost): nothing was read or written; run again once the server
    answers.  The last error is the ``__cause__``."""


class DynamoDBFailed(SparkTrackingError):
    """DynamoDB refused or did not answer a request of the run's driver (unreachable,
    throttled past botocore's retries, access denied, ...): the run stopped there.

    None of the run's inputs counts as done: the output was not touched (it is written once,
    after the last round) and no report file was written.  The run's open chains were failed
    (``its round did not end: ...``), except ``.left_open``: those DynamoDB did not let it fail
    (nothing stamps them any more).  Run the job again once DynamoDB answers: every input is
    replayed under new chains.  ``.phase``: ``"create"``, ``"produce"`` (the round's Spark
    job, stopped by the driver once connections to DynamoDB were refused for
    ``endpoint_watch.UNREACHABLE_AFTER`` seconds), ``"commit check"``, ``"judge"``,
    ``"abandon"`` (failing a stopped run's chains), or for a tracked stream ``"marks"``,
    ``"marks before commit"`` and ``"marks after commit"`` (its inputs' commit marks; after
    the commit, the output is in place and the next run settles the marks left live);
    ``__cause__``: botocore's error."""

    #: Where the driver was, in the message's words.
    PHASES: ClassVar[dict[str, str]] = {
        "create": "the creation of round {round}'s chains",
        "commit check": "the commit check of round {round}, reading its chains or writing "
        "their commit stamps",
        "judge": "the judging of round {round}'s chains",
        "produce": "round {round}'s Spark job (connections to DynamoDB were refused for "
        "longer than a run waits: its tasks' stamps could not land)",
        "abandon": "the failing of a stopped run's chains",
        "marks": "the reading and marking of the stream's inputs (which ones earlier runs "
        "committed)",
        "marks before commit": "the failing of the failed inputs' marks, before the output "
        "was put in place",
        "marks after commit": "the stamping of the committed inputs' marks, after the output "
        "was put in place",
    }

    def __init__(
        self,
        phase: str,
        cause: str,
        *,
        run_id: str,
        round_: int | None = None,
        left_open: tuple[str, ...] = (),
        acked: int = 0,
        none_made: bool = False,
    ) -> None:
        where = self.PHASES[phase].format(round=round_)
        chains = (
            "none of its chains was made"
            if none_made
            else (
                f"{len(left_open)} of its chains could not be failed and may stay open, never "
                "stamped again (.left_open; fail them with `xor-ack chain fail TAG` once "
                "DynamoDB answers)"
                if left_open
                else "its open chains were failed"
            )
        )
        earlier = f"; the {acked} inputs acked before are not in the output either" if acked else ""
        if "Could not connect to the endpoint URL" in cause:  # nothing there: a typo, or down
            cause += " (check the chains' endpoint_url and region, or start the server there)"
        if phase == "marks after commit":  # the output is in place: say so, and what follows
            message = (
                f'DynamoDB failed the driver during {where}: {cause}. Run "{run_id}" put its '
                "output in place, and no report file was written; the marks it did not stamp "
                "stay live, and the stream's next run reads them as committed by this run's "
                "folder: no input is processed twice"
            )
        else:
            message = (
                f'DynamoDB failed the driver during {where}: {cause}. Run "{run_id}" stopped '
                "and none of its inputs counts as done: the output was not touched, no report "
                f"file was written, {chains}{earlier}. Run the job again once DynamoDB "
                "answers: every input is replayed under new chains"
            )
        super().__init__(message)
        self.phase = phase
        self.run_id = run_id
        self.round = round_
        self.left_open = left_open


class RunIdInUse(SparkTrackingError):
    """A ``run_id`` given again while another run under it holds some of this run's inputs
    (live chains: ``TagExists`` on their creates) or its staging folder (rows staged by a
    run still going, or by one stopped before it removed them): the run stopped before its
    job, with nothing of the other run's read, taken or removed.

    The output was not touched and no report file was written; this run's own chains were
    failed, the other run's left as they are.  ``.run_id``; ``.tags``: the chains held;
    ``.folder``: the staging folder found (None when chains were)."""

    def __init__(
        self, run_id: str, tags: tuple[str, ...] = (), *, folder: str | None = None
    ) -> None:
        if folder is not None:
            held = (
                f"{folder} holds rows another run under it staged (one still going, or one "
                "stopped before it removed them)"
            )
            then = "once no run under it is going, delete that folder"
        else:
            many = f"{len(tags)} of its inputs' chains, first " if len(tags) > 1 else ""
            held = f'live chains of another run hold {many}"{tags[0]}"'
            then = "let that run end first"
        super().__init__(
            f'run_id="{run_id}" is in use: {held}. '
            f'Run "{run_id}" stopped before its job: the output was not touched, no report '
            "file was written, and that run's chains were left as they are. Give this run "
            f"another run_id (or none: a new one is made each run), or {then}"
        )
        self.run_id = run_id
        self.tags = tags
        self.folder = folder


class BatchFailed(SparkTrackingError):
    """A micro-batch of a tracked stream ended with inputs that failed (the query stops)."""


class InputRejected(SparkTrackingError):
    """Raised by the user's function: this input can never be processed (e.g. not UTF-8).

    The input ends ``failed`` at once with the message as its reason, and is not
    replayed: the same bytes would be rejected again.  Its chain is closed with
    that reason; the other inputs of the round are not affected.
    """


class InputsInterleaved(SparkTrackingError):
    """A task's rows of one input were not contiguous: its round fails rather than
    run the user's function twice over parts of one input."""


class TornBatch(SparkTrackingError):
    """A micro-batch folder of a stream's output that a run committed (its inputs' marks
    name that run) lacks entries its manifest names, or the manifest: its rename was
    interrupted on a store whose folder rename is not atomic (S3A, GCS).  Its inputs are
    neither taken as committed nor processed again, which would leave its rows in the
    output twice: the query stops before its batch commits anything.  Move the folder out of
    the output (``.folder``), then restart: its inputs are processed again."""

    def __init__(self, folder: str, missing: list[str] | None) -> None:
        lacks = "its manifest" if missing is None else f"{len(missing)} of its files"
        super().__init__(
            f"micro-batch folder {folder} is torn: it lacks {lacks} (a rename interrupted "
            "on a store whose rename is not atomic); the output is untouched: move that "
            "folder out of the output, then restart the query, which processes its inputs "
            "again"
        )
        self.folder = folder
        self.missing = missing


class OutputDisplaced(SparkTrackingError):
    """The new output could not be renamed into place, nor the former one back (the
    output's path was taken meanwhile): the former output is kept where the message
    says, untouched; move it back by hand.  ``.previous``: that folder."""

    def __init__(self, message: str, previous: str) -> None:
        super().__init__(message)
        self.previous = previous


class OutputWriteFailed(SparkTrackingError):
    """The final write of the output failed after the rounds (a ``finish`` that fails on the
    data, the storage refusing a file): nothing was written to the output, a former one is
    kept as it was, and the staging folder is removed.  The acked inputs' rows are not in
    any output: run the job again.  ``report``: the run's report; the error the
    ``__cause__``."""

    def __init__(self, message: str, report: object | None = None) -> None:
        super().__init__(message)
        self.report = report


class UntrackedRunFailed(SparkTrackingError):
    """A Spark job of an untracked run (``tracking=False``) failed: an input's function
    raised or rejected its input, or Spark failed.  With no chains to fail one input
    alone, an untracked run stops at its first failed job, as a plain Spark job does;
    nothing was written to the output.  ``report``: the run's report (the inputs of
    earlier pages ``counted``); the error is the ``__cause__``."""

    def __init__(self, said: str, report: object | None = None) -> None:
        super().__init__(
            f"an untracked run (tracking=False) stops at its first input that fails, where a"
            f" tracked run fails that input alone: {said.replace(f'{__name__}.', '')}; nothing"
            " was written to the output"
        )
        self.report = report


class RoundTimedOut(SparkTrackingError):
    """A round's Spark jobs ran past the per-round timeout and were cancelled."""


class _OutputSchemaMismatch(SparkTrackingError):
    """Deprecated, never raised: a function whose rows do not fit the declared schema fails
    that input's attempt (``bad output: ...`` in its history), or the run as
    :class:`Incurable` when every input of a round does so."""


def __getattr__(name: str) -> type[SparkTrackingError]:
    """``OutputSchemaMismatch`` still imports (with a warning): nothing raises it any more."""
    if name == "OutputSchemaMismatch":
        warnings.warn(
            "xor_ack_dynamodb.spark.OutputSchemaMismatch is deprecated and never raised: a "
            "function's rows that do not fit the schema fail that input ('bad output' in its "
            "history), or the run as Incurable when every input of a round does so",
            DeprecationWarning,
            stacklevel=2,
        )
        return _OutputSchemaMismatch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
