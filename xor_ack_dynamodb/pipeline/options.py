"""What a word count run is asked to do, and who watches it (the progress display)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .faults import FaultConfig
from .report import Report, RoundResult
from .tracker import TrackerConfig


@dataclass
class WordCountOptions:
    """Everything a run needs besides the SparkSession."""

    input: str
    output: str
    tracking: bool = True
    tracker: TrackerConfig | None = None
    #: Counting tasks; None: the Spark default parallelism (cores), between 2 and 8.
    partitions: int | None = None
    read_partitions: int | None = None
    timeout: float = 300.0
    max_attempts: int = 8
    faults: FaultConfig = field(default_factory=FaultConfig)
    run_id: str | None = None
    work_dir: str | None = None
    keep_staging: bool = False
    #: Replace an existing OUTPUT, if it is a folder this tool wrote (see ``paths``).
    overwrite: bool = False
    output_partitions: int = 1
    driver_concurrency: int = 32

    def __post_init__(self) -> None:
        if self.partitions is not None and self.partitions < 1:
            raise ValueError("partitions must be >= 1")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        if self.output_partitions < 1:
            raise ValueError("output_partitions must be >= 1")
        if self.tracking and self.tracker is None:
            raise ValueError("tracking needs a tracker (TrackerConfig)")
        if self.partitions is not None:
            check_token_window(self.tracker, self.partitions)


def check_token_window(tracker: TrackerConfig | None, partitions: int) -> None:
    """Every write of a chain's life must stay in its recent-token list (exact idempotency)."""
    if tracker is not None and tracker.token_window < partitions + 4:
        raise ValueError(
            f"token_window {tracker.token_window} is too small for {partitions} "
            "partitions: it must be >= partitions + 4 so that every write of a chain "
            "stays recognisable"
        )


@dataclass
class RoundProgress:
    """A snapshot while a round runs, for the progress display."""

    round: int
    files: int
    tasks_done: int
    tasks_total: int
    task_failures: int
    metrics: dict[str, int]


class Observer(Protocol):
    """Receives progress (the rich display implements it; ``None`` means silent)."""

    def started(self, report: Report) -> None: ...
    def round_started(self, round_: int, files: int) -> None: ...
    def round_progress(self, progress: RoundProgress) -> None: ...
    def round_ended(self, result: RoundResult, report: Report) -> None: ...
    def step(self, text: str) -> None: ...
    def finished(self, report: Report) -> None: ...


class Silent:
    def started(self, report: Report) -> None:
        pass

    def round_started(self, round_: int, files: int) -> None:
        pass

    def round_progress(self, progress: RoundProgress) -> None:
        pass

    def round_ended(self, result: RoundResult, report: Report) -> None:
        pass

    def step(self, text: str) -> None:
        pass

    def finished(self, report: Report) -> None:
        pass
