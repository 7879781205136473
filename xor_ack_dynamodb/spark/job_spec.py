"""What a tracked job is: its inputs, its function, its sink and options, checked at once.

``track`` and ``track_stream`` make a :class:`JobSpec`; ``job.TrackedJob`` runs it.  A
spec that cannot run is refused here, before anything is read or written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..dynamodb import MAX_TIMEOUT, MIN_TIMEOUT
from ..errors._refusals import shown
from ..lifecycle import Acked, Failed
from .arguments import check_keys, check_options, check_process
from .errors import InvalidArgument
from .faults import FaultConfig
from .paging import DEFAULT_PAGE_SIZE
from .paths import is_inside, is_remote, local_path, name_max, real_path
from .report import InputResult, RoundObserver, TrackedReport
from .report_stream import partial_name
from .sink import Sink
from .stages import Process
from .tracker import TrackerConfig

#: A ``run_id`` the caller gives: it names folders beside the output (the staging folder,
#: a stream's batch folder) which a run removes, so it must stay one plain name.
RUN_ID_MAX = 64
RUN_ID = re.compile(rf"[A-Za-z0-9_-][A-Za-z0-9_.-]{{0,{RUN_ID_MAX - 1}}}")

#: What the driver tells about each input's end (``track(on_event=...)``).
EventSink = Callable[[Acked | Failed], None]


class CommitMarks(Protocol):
    """Which inputs an earlier run committed, kept outside the job (``stream_marks``)."""

    #: Inputs left out of the run so far because an earlier run committed them.
    skipped: int

    def unmarked(self, keys: Iterator[str]) -> Iterator[str]: ...
    def before_commit(self, report: TrackedReport) -> None: ...
    def after_commit(self, report: TrackedReport) -> None: ...


@dataclass
class JobSpec:
    """A tracked job: what to read, what to do per input, where the result goes."""

    process: Process
    schema: str  # the rows ``process`` returns, as a DDL string ("word string, n long")
    sink: Sink
    source: Any = None  # a DataFrame with a column ``key`` naming each row's input, or None
    key: str | None = None
    keys: Sequence[str] | None = None  # the inputs; default: the distinct keys of ``source``
    tracker: TrackerConfig | None = None
    partitions: int | None = None  # shuffle partitions before staging; None: no shuffle
    #: Tasks that run the user's function (fewer when fewer inputs); None: ``default_input_tasks``.
    input_tasks: int | None = None
    max_attempts: int = 8
    #: Attempts of an input whose function raised (or ended its process) before it is failed.
    max_errors: int = 2
    faults: FaultConfig = field(default_factory=FaultConfig)
    run_id: str | None = None
    keep_staging: bool = False
    #: Where the rounds' staged rows go (a hidden folder of the run); None: the staging folder.
    work_dir: str | None = None
    #: Seconds a round's Spark jobs may take; its unfinished inputs are replayed.  None: no limit.
    round_timeout: float | None = None
    #: Seconds from its creation to each chain's deadline (a sweep fails it "timeout" after
    #: it, should the driver die before judging it).  None: chains without a deadline.
    chain_timeout: float | None = None
    on_event: EventSink | None = None
    observer: RoundObserver | None = None
    #: Inputs that failed before any round (``InputResult`` with status ``failed``).
    failed_before: Sequence[InputResult] = ()
    #: Inputs listed, planned and tracked per page (what the driver holds at once).
    page_size: int = DEFAULT_PAGE_SIZE
    #: Where each input's ending is written as a JSON line (None: a temporary file).
    report_path: str | None = None
    #: Inputs committed by an earlier run, left out (``track_stream``'s marks).
    marks: CommitMarks | None = None

    def __post_init__(self) -> None:
        check_options(self)
        if self.keys is not None:
            self.keys = check_keys(self.keys)
        if self.source is None and self.keys is None:
            raise InvalidArgument("give the inputs: a source DataFrame with key=..., or keys=[...]")
        if self.source is not None and not self.key:
            raise InvalidArgument(
                "a source DataFrame needs key=<the column naming each row's input>"
            )
        if min(self.max_attempts, self.max_errors) < 1:
            raise InvalidArgument("max_attempts and max_errors must be >= 1")
        for name in ("round_timeout", "chain_timeout"):
            seconds = getattr(self, name)
            # compared, not math.isfinite: that raises OverflowError for an int too big
            if seconds is not None and not MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
                raise InvalidArgument(
                    f"{name}={shown(seconds)}: give a number of seconds of at least"
                    f" {MIN_TIMEOUT:g} and at most {MAX_TIMEOUT:.0f} (a year), or None for no"
                    " limit"
                )
        if self.page_size < 1:
            raise InvalidArgument("page_size must be >= 1")
        if self.run_id is not None and not RUN_ID.fullmatch(self.run_id):
            raise InvalidArgument(
                f"run_id={self.run_id!r}: it names the run's folders beside the output, so "
                "use letters, digits, '_', '-' and '.' only (at most 64, not starting with "
                "'.'), or leave it out for a new one"
            )
        if self.input_tasks is not None and self.input_tasks < 1:
            raise InvalidArgument(
                "input_tasks must be >= 1 (or None: three per core of the session)"
            )
        if self.report_path is not None:
            refuse_report(self.report_path, self.sink.path)
            # Where the caller is now: written as inputs end, renamed onto at the end.
            self.report_path = os.path.abspath(self.report_path)
        check_process(self.process)  # last: it pickles the function, the other checks don't


def _inside(path: str, output: str, disk: bool) -> bool:
    """Is ``path`` at or in the folder ``output``: links resolved on this disk, or (``disk``
    False: another machine's) by the names alone."""
    if disk:
        return is_inside(real_path(path), real_path(output))
    return is_inside(os.path.normpath(local_path(path)), os.path.normpath(local_path(output)))


def refuse_report(path: str, output: str | None = None, *, disk: bool = True) -> None:
    """Refuse a report file that could not be written when the run ends (a run's lines go
    to a hidden file beside it, renamed onto it): before the first chain, not after.

    ``output``: the sink's folder.  A report at it or inside it is refused too: renamed onto
    the output, or its hidden file in the output's folder, it fails the run's commit.
    ``disk=False``: what the name alone tells (the report is written on another machine's
    disk, which each run there checks before its first write)."""
    try:
        os.fsencode(path)
    except UnicodeError:  # e.g. a lone surrogate: no file system name can hold it
        raise InvalidArgument(
            f"report={path!r} cannot be a file's name here (it is no valid text for the "
            "file system): give another path"
        ) from None
    folder = os.path.dirname(os.path.abspath(path))
    if path.endswith(os.sep) or (os.altsep is not None and path.endswith(os.altsep)):
        why = "ends in a separator, so it can only name a folder: give the path of a file"
    elif output is not None and not is_remote(output) and _inside(path, output, disk):
        why = (
            f"is at or inside the output folder {output!r}, which holds what the run commits"
            " and nothing else: give a path outside it"
        )
    elif not disk:
        return  # its folder and its links are judged where it is written
    elif os.path.islink(path):
        why = (
            "is a symbolic link: the report is put in place by a rename, which would replace"
            f" the link; give the path it points to ({os.path.realpath(path)!r}) or another"
        )
    elif os.path.isdir(path):
        why = "is a folder: give the path of a file in it"
    elif not os.path.isdir(folder):
        why = f"is in no folder ({folder} does not exist): create it, or give another path"
    elif not os.access(folder, os.W_OK | os.X_OK):
        why = f"cannot be written ({folder} is not writable): give another path"
    elif len(partial_name(os.path.basename(path)).encode("utf-8", "surrogateescape")) > (
        limit := name_max(folder)
    ):
        why = (
            "is too long a name: its lines go to .NAME.<12 hex digits>.partial beside it,"
            f" which must fit the {limit} bytes a name may have there; give a shorter name"
        )
    else:
        return
    raise InvalidArgument(f"report={path!r} {why}")
