"""Where a run stages and commits, and the rule that a run never replaces good output with worse.

A run's output is written once, after its last round.  What it may do:

- every input acked: the output is written (a folder: staged, given Spark's
  ``_SUCCESS`` and a manifest saying ``"complete": true``, then renamed into place,
  or its files moved into an empty folder that is there, the manifest last;
  a table: appended to, or its rows replaced with ``overwrite``);
- some input failed: a folder that does not exist (or is empty) gets the acked
  inputs' rows without ``_SUCCESS``, its manifest saying ``"complete": false``; an
  existing output (a folder the library wrote, a table) is left exactly as it was,
  unless the sink asks for it in so many words (``Sink(partial=True)``);
- any other ending (an error, an interruption, a run stopped as incurable): the
  output is not touched.

Every file step goes through :class:`~.files.Files`: where Spark runs, never on a
Spark Connect client's disk.  Paths are made absolute on the client before they
are sent (classic Spark: against the driver's working directory, which is Spark's);
over Spark Connect a relative path is refused (:class:`~.errors.RelativePath`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from . import output
from .errors import InputEmpty, InvalidArgument, OutputDisplaced, RunIdInUse
from .files import Files, is_connect
from .paths import (
    MANIFEST,
    STAGING_MARK,
    SUCCESS,
    OutputAction,
    is_inside,
    judge_output,
    manifest_inputs,
    manifest_text,
    qualified,
    real_path,
    server_path,
    staging_path,
    staging_too_long,
)
from .sink import Sink

#: What the commit did: a complete or partial output written, or the former one kept.
Written = Literal["complete", "partial", "kept"]


@dataclass(frozen=True)
class Counts:
    """How many inputs the run had, and how many of them were acked."""

    inputs: int
    acked: int

    @property
    def complete(self) -> bool:
        return self.acked == self.inputs


def refuse_emptying(counts: Counts, replaced: str) -> None:
    """A run with no input (``keys=[]``, a source with no keyed row) does not replace an
    output that had some with an empty one: an upstream that produced nothing would
    otherwise wipe the last good result.  ``replaced``: what ``Sink(overwrite=True)``
    would replace, in the caller's words."""
    if counts.inputs == 0:
        raise InputEmpty(
            "the run had no input (keys=[], or a source with no row whose key is set), and "
            f"Sink(overwrite=True) would replace {replaced} with an empty output: it is "
            "kept as it was.  Check the source; for an empty output, remove the former "
            "one first"
        )


class Target(Protocol):
    """Where a run stages its rows and commits its output."""

    staging: str
    rows_root: str
    files: Files

    def check(self, struct: Any, *, probe: bool = True) -> None: ...
    def commit(self, rows: Any, counts: Counts, run_id: str) -> Written: ...
    def cleanup(self) -> None: ...


def refuse_staged(files: Files, rows_root: str, run_id: str) -> None:
    """Refuse a run whose rows folder exists already: another run under its ``run_id``
    staged rows there (one going, or one stopped before it removed them), and the commit
    would take that run's rows of the same rounds and ids for this one's."""
    if files.listing(rows_root) is not None:
        raise RunIdInUse(run_id, folder=rows_root)


def resolver(spark: Any) -> Any:
    """How a path is made absolute before it is sent: refused when relative over Connect."""
    if is_connect(spark):
        return server_path
    return lambda path, _what: qualified(path)


class FolderTarget:
    """A folder output: staged beside it (a hidden sibling), renamed into place."""

    def __init__(self, spark: Any, sink: Sink, run_id: str, work_dir: str | None) -> None:
        assert sink.path is not None
        resolve = resolver(spark)
        self.sink = sink
        self.path: str = sink.path
        self.files = Files(spark)
        self.run_id = run_id
        self.output = resolve(sink.path, "the sink's folder")
        self.staging = staging_path(self.output, run_id)
        self.work_dir = resolve(work_dir, "the work folder") if work_dir else None
        self.rows_root = (
            f"{self.work_dir}/.xor-ack-{run_id}" if self.work_dir else f"{self.staging}/rows"
        )
        #: Set when the staging folder holds the former output: ``cleanup`` leaves it.
        self.keep_staging = False

    def check(self, struct: Any, *, probe: bool = True) -> None:
        """Refuse before anything is read or written (``paths.judge_output``, a former
        output left displaced by a run stopped mid-commit), and what the commit could not
        write (``struct``: the declared schema; ``probe=False``: the format is not tried
        again, a stream tried it when it started)."""
        limit = staging_too_long(self.output, self.run_id)
        if limit is not None:  # found by the first write beside it, after every chain
            raise InvalidArgument(
                f"Sink(path={self.path!r}) is too long a name: the run stages beside it in"
                f" .NAME.xor-ack-{self.run_id}-check, which must fit the {limit} bytes a name"
                " may have there; give a shorter name"
            )
        if self.work_dir is not None and is_inside(
            real_path(self.work_dir), real_path(self.output)
        ):  # its rows would be staged in the output, which the commit then refuses
            raise InvalidArgument(
                f"work_dir={self.work_dir!r} is at or inside Sink(path={self.path!r}): the run"
                " stages its rows there; give a work folder outside the output"
            )
        self._refuse_displaced()
        judge_output(self.path, self.files.listing(self.output, tree=True), self.sink.overwrite)
        refuse_staged(self.files, self.rows_root, self.run_id)
        scratch = f"{self.staging}-check"
        output.check(self.files.spark, struct, self.sink, scratch, self.files, probe=probe)

    def commit(self, rows: Any, counts: Counts, run_id: str) -> Written:
        """Write ``rows`` into the output as the rules allow (see the module docstring)."""
        former = self.files.listing(self.output, tree=True)
        action = judge_output(self.path, former, self.sink.overwrite)
        if not counts.complete and not self.sink.partial and action is OutputAction.REPLACE_OURS:
            return "kept"
        if action is OutputAction.REPLACE_OURS and former is not None:
            had = manifest_inputs(former.manifest)  # None: a manifest that does not say
            if had != 0:  # an empty output (a stream's batch run again) may be replaced
                of = f"{had} inputs" if had else "an earlier run"
                refuse_emptying(counts, f"{self.path} (the output of {of})")
        staged = f"{self.staging}/output"
        output.write(rows, self.sink, staged)
        if not counts.complete:  # Spark's marker says "a complete result": not this one
            for name in (SUCCESS, f".{SUCCESS}.crc"):
                self.files.delete(f"{staged}/{name}")
        listing = self.files.listing(staged, tree=True)
        names = listing.tree if listing is not None else ()
        text = manifest_text(
            run_id,
            "",
            names,
            complete=counts.complete,
            inputs=counts.inputs,
            acked=counts.acked,
        )
        self.files.write_text(f"{staged}/{MANIFEST}", text)
        self._replace(staged)
        return "complete" if counts.complete else "partial"

    def _replace(self, staged: str) -> None:
        """Renames: the output is absent (or the empty folder it was), the former one, or
        complete.

        Raises, with the output as it was, if the new one could not be put in place.
        """
        action = judge_output(
            self.path, self.files.listing(self.output, tree=True), self.sink.overwrite
        )
        if action is OutputAction.REPLACE_EMPTY:
            self._fill(staged)
        elif action is OutputAction.REPLACE_OURS:
            self._swap(staged, f"{self.staging}/previous")
        else:
            self.files.rename(staged, self.output)

    def _fill(self, staged: str) -> None:
        """Move the staged entries into the empty folder at the output's path, which stays
        (its owner, group, mode: a user's folder, not swapped for the run's): the rows
        first, Spark's marker then, the manifest last (a folder without it is no output of
        ours).  On a failure those moved go back, leaving the folder empty, and it raises."""
        last = (SUCCESS, f".{SUCCESS}.crc", f".{MANIFEST}.crc", MANIFEST)
        names = [n.rstrip("/") for n in self.files.names(staged) or ()]
        ordered = [n for n in names if n not in last] + [n for n in last if n in names]
        self.files.fill(staged, self.output, ordered)

    def _swap(self, staged: str, previous: str) -> None:
        """Move the former output aside to ``previous``, the new one into place.

        From the first rename until the output is whole again, ``cleanup`` keeps the
        staging folder: an interruption as a rename returns (a signal raised there) must
        not delete the former output with it.  On any failure before the new output is in
        place the former one goes back; if it cannot, or the new one is in place already,
        it stays in ``previous`` (the next run refuses with ``OutputDisplaced``, saying
        where it is).
        """
        self.keep_staging = True
        try:
            self.files.rename(self.output, previous)
            self.files.rename(staged, self.output)
        except BaseException as failed:
            if self.files.listing(previous) is None:  # never moved: still at the output's path
                self.keep_staging = False
                raise
            if self.files.listing(staged) is None:  # the new output is in place: the former
                raise  # stays in ``previous``, and the next run says where it is
            try:
                self.files.rename(previous, self.output)
            except BaseException as stuck:  # the path was taken: keep the former output
                raise OutputDisplaced(
                    f"the new output could not be put at {self.path} ({failed}), nor the "
                    f"former one back ({stuck}): the former output is kept, untouched, "
                    f"in {previous}; move it back to {self.path} by hand",
                    previous,
                ) from stuck
            self.keep_staging = False
            raise
        self.keep_staging = False
        # The former output is replaced: removed now, not left for ``cleanup``, which a run
        # with ``keep_staging`` skips (the next run would take it for a displaced output).
        self.files.delete(previous)

    def _refuse_displaced(self) -> None:
        """Refuse while a run's staging folder holds the output it replaced (``previous``).

        A run stopped between the commit's two renames (killed, its machine lost) leaves
        the former output there, and OUTPUT absent, with nothing else to say so; a run
        under the same ``run_id`` would remove it with its staging folder.  The staging
        folders are OUTPUT's hidden siblings, one per run: found by their prefix.
        """
        parent, _, name = self.output.rpartition("/")
        prefix = f".{name}.{STAGING_MARK}"
        names = self.files.names(parent)
        folders = [self.staging] if names is None else [f"{parent}/{n.rstrip('/')}" for n in names]
        for folder in folders:
            if not folder.rpartition("/")[2].startswith(prefix):
                continue
            previous = f"{folder}/previous"
            if self.files.listing(previous) is None:
                continue
            now = "is missing" if self.files.listing(self.output) is None else "holds its output"
            raise OutputDisplaced(
                f"a run (run_id {folder.rpartition(prefix)[2]}) stopped while it replaced the "
                f"sink's folder {self.path} (which now {now}): the output it "
                f"replaced is kept, untouched, in {previous}. Move it back to {self.path}, "
                "or delete it if it is no longer needed, then run again; nothing was written",
                previous,
            )

    def cleanup(self) -> None:
        if self.keep_staging:  # it holds the former output (OutputDisplaced)
            return
        self.files.delete(self.staging)
        if self.work_dir:
            self.files.delete(self.rows_root)
