"""What a tracked job returns: one entry per input, one per round, the chains' writes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

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
    round: int
    inputs: int
    acked: int = 0
    replayed: int = 0
    failed: int = 0
    job_error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class TrackedReport:
    run_id: str
    output: str
    tracking: bool
    inputs: list[InputResult] = field(default_factory=list)
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

    @property
    def acked(self) -> int:
        return sum(1 for i in self.inputs if i.status == "acked")

    @property
    def replayed(self) -> int:
        """Inputs that needed more than one attempt."""
        return sum(1 for i in self.inputs if i.attempts > 1)

    @property
    def failed(self) -> list[InputResult]:
        return [i for i in self.inputs if i.status == "failed"]

    @property
    def ok(self) -> bool:
        """Every input acked (or, untracked, counted)."""
        return all(i.status in ("acked", "counted") for i in self.inputs)

    @property
    def writes_per_input(self) -> float | None:
        return self.chain_writes / len(self.inputs) if self.tracking and self.inputs else None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["writes_per_input"] = self.writes_per_input
        return data

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, ensure_ascii=True)


class RoundObserver(Protocol):
    """Told of a tracked job's progress on the driver (e.g. a progress display)."""

    def started(self, report: TrackedReport) -> None: ...
    def round_started(self, round_: int, inputs: int) -> None: ...
    def round_ended(self, summary: RoundSummary, report: TrackedReport) -> None: ...
