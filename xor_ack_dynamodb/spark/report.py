"""What a tracked job returns: its inputs' endings (streamed), its rounds, the chains' writes.

The inputs are not held in memory: each ending is a JSON line (``report_stream``),
written as the input ends, and read back when asked (``inputs``, ``failed``,
``endings()``); the report itself keeps counters.  ``inputs`` is still the list
of every input's ``InputResult`` (sorted by key), built on demand.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from .report_stream import Endings

Status = Literal["pending", "acked", "failed", "counted"]


@dataclass
class InputResult:
    """One input: ``acked`` (its committed rows are in the output exactly once), or not."""

    key: str
    status: Status = "pending"
    attempts: int = 0
    #: One line per attempt: ``acked`` or why it was replayed / failed.
    history: list[str] = field(default_factory=list)


@dataclass
class RoundSummary:
    """Round ``round`` over every page of inputs: its inputs, outcomes and seconds."""

    round: int
    inputs: int
    acked: int = 0
    replayed: int = 0
    failed: int = 0
    job_error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    def add_seconds(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + seconds, 3)


@dataclass(init=False)
class TrackedReport:
    """A tracked run: its counters and rounds here, its inputs' endings in a JSON Lines file.

    Made as it always was (``inputs=`` the list of a report built by hand); the
    job writes each ending as it comes (``ended``) instead.
    """

    run_id: str
    output: str
    tracking: bool
    rounds: list[RoundSummary] = field(default_factory=list)
    #: Writes that landed on the chains (create, stamps, fail), from each item's version.
    chain_writes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    #: What the job was asked (the application's own entries, e.g. the command's options).
    settings: dict[str, Any] = field(default_factory=dict)
    #: What the application measured in the output (e.g. the word count's words).
    totals: dict[str, Any] = field(default_factory=dict)
    #: What the commit did: ``complete`` / ``partial`` output written, or the former one
    #: ``kept`` (some input failed and the sink did not ask for partial output); empty
    #: when the run ended before its commit.
    output_state: str = ""
    #: Inputs listed so far (all of them once the run is done); each ends once.
    listed: int = 0
    #: Inputs known before the listing (``keys=`` given), None: known once listed.
    expected: int | None = None
    #: Inputs left out because an earlier run committed them (``track_stream``).
    skipped: int = 0
    #: Chains this run failed (an attempt replayed, an input failed): ``Failed`` events.
    chains_failed: int = 0
    #: Events whose ``on_event`` raised (logged, and the run went on: ``telling``).
    event_errors: int = 0
    #: Rows of the source whose key column is null: in no input, so never processed.
    #: None: not counted (``keys=`` given with a source, which is then not listed).
    null_key_rows: int | None = 0
    #: Where the endings are written as JSON Lines (None: a temporary file).
    report_path: str | None = None

    def __init__(
        self,
        run_id: str,
        output: str,
        tracking: bool,
        inputs: Iterable[InputResult] = (),
        rounds: list[RoundSummary] | None = None,
        chain_writes: int = 0,
        seconds: dict[str, float] | None = None,
        settings: dict[str, Any] | None = None,
        totals: dict[str, Any] | None = None,
        *,
        report_path: str | None = None,
    ) -> None:
        self.run_id, self.output, self.tracking = run_id, output, tracking
        self.rounds = [] if rounds is None else rounds
        self.chain_writes = chain_writes
        self.seconds = {} if seconds is None else seconds
        self.settings = {} if settings is None else settings
        self.totals = {} if totals is None else totals
        self.listed, self.expected, self.skipped, self.null_key_rows = 0, None, 0, 0
        self.chains_failed = self.event_errors = 0
        self.output_state = ""
        self.report_path = report_path
        self._endings = Endings(report_path)
        if inputs:
            self.inputs = inputs

    # -- the endings ------------------------------------------------------------------

    def ended(self, entry: InputResult) -> None:
        """``entry``'s input ended (acked, failed, counted): its line is written now."""
        self._endings.add(entry)

    def ended_before(self, entries: Iterable[InputResult], expected: int | None) -> None:
        """Inputs that ended before any round (refused while listed); ``expected``: the
        inputs the run was given, if it knows them before listing them."""
        before = list(entries)
        for entry in before:
            self.ended(entry)
        self.listed += len(before)
        self.expected = None if expected is None else expected + len(before)

    def round_summary(self, round_: int, inputs: int) -> RoundSummary:
        """Round ``round_``'s summary (one over every page), counting ``inputs`` more."""
        while len(self.rounds) < round_:
            self.rounds.append(RoundSummary(len(self.rounds) + 1, 0))
        summary = self.rounds[round_ - 1]
        summary.inputs += inputs
        return summary

    def endings(self) -> Iterator[InputResult]:
        """Every input that ended so far, in the order they ended, read from the lines."""
        for data in self._endings.lines():
            yield InputResult(data["key"], data["status"], data["attempts"], data["history"])

    @property
    def inputs(self) -> list[InputResult]:
        """Every input that ended, sorted by key (read back whole: O(inputs) in memory)."""
        return sorted(self.endings(), key=lambda entry: entry.key)

    @inputs.setter
    def inputs(self, entries: Iterable[InputResult]) -> None:
        """The inputs of a report built by hand (its endings written anew)."""
        self._endings = Endings(self.report_path)
        self._endings.extend(entries)
        self.listed = self._endings.count

    def finish(self) -> None:
        """The run is over: the summary is the report file's last line."""
        self._endings.close(self.summary())

    def abandon(self) -> None:
        """The run raised before it ended: the report file, if named, is left as it was,
        and no longer named here (it holds an earlier run's lines, or none): this run's
        endings stay readable from the report (``endings()``).  A report finished before
        the run raised (``Incurable``) is this run's, and stays named."""
        if self._endings.closed:
            return
        self._endings.abandon()
        self.report_path = None

    # -- the counts -------------------------------------------------------------------

    @property
    def acked(self) -> int:
        return self._endings.statuses["acked"]

    @property
    def replayed(self) -> int:
        """Inputs that needed more than one attempt."""
        return self._endings.replayed

    @property
    def failed(self) -> list[InputResult]:
        return sorted((e for e in self.endings() if e.status == "failed"), key=lambda e: e.key)

    @property
    def failed_count(self) -> int:
        return self._endings.statuses["failed"]

    @property
    def pending(self) -> int:
        """Inputs listed that have not ended (a run cut short)."""
        return max(0, self.listed - self._endings.count)

    @property
    def ok(self) -> bool:
        """Every input acked (or, untracked, counted)."""
        return self.failed_count == 0 and self.pending == 0

    @property
    def writes_per_input(self) -> float | None:
        return self.chain_writes / self.listed if self.tracking and self.listed else None

    def summary(self) -> dict[str, Any]:
        """Everything but the inputs: counts, rounds, writes, seconds, settings, totals."""
        data = asdict(self)
        data.update(
            acked=self.acked,
            failed=self.failed_count,
            replayed=self.replayed,
            pending=self.pending,
            ok=self.ok,
            writes_per_input=self.writes_per_input,
        )
        return data

    def as_dict(self) -> dict[str, Any]:
        """The summary and every input (``inputs``: read back whole)."""
        data = asdict(self)
        data["inputs"] = [asdict(entry) for entry in self.inputs]
        data["writes_per_input"] = self.writes_per_input
        return data

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=True)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_endings_lines"] = [asdict(entry) for entry in self.endings()]
        del state["_endings"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        lines = state.pop("_endings_lines")
        self.__dict__.update(state)
        self._endings = Endings(None)
        self._endings.extend(InputResult(**line) for line in lines)


class RoundObserver(Protocol):
    """Told of a tracked job's progress on the driver (e.g. a progress display)."""

    def started(self, report: TrackedReport) -> None: ...
    def round_started(self, round_: int, inputs: int) -> None: ...
    def round_ended(self, summary: RoundSummary, report: TrackedReport) -> None: ...
