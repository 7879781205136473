"""What a run did: per file (acked or failed, after how many attempts) and in total."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["acked", "failed", "pending", "counted"]


@dataclass
class Attempt:
    """One attempt at one file: how it ended (``acked`` or why it is replayed / failed)."""

    attempt: int
    outcome: str


@dataclass
class FileResult:
    path: str
    status: Status = "pending"
    attempts: int = 0
    history: list[Attempt] = field(default_factory=list)


@dataclass
class RoundResult:
    round: int
    files: int
    partitions: int
    acked: int = 0
    replayed: int = 0
    failed: int = 0
    job_error: str | None = None
    #: Task attempts that failed in the round's job (Spark re-ran them).
    task_failures: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, int] = field(default_factory=dict)


class PhaseClock:
    """Wall time per named phase (phases may repeat: their times add up)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._start = time.monotonic()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - start)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def total(self) -> float:
        return time.monotonic() - self._start


@dataclass
class Report:
    run_id: str
    input: str
    output: str
    tracking: bool
    settings: dict[str, Any]
    files: list[FileResult] = field(default_factory=list)
    rounds: list[RoundResult] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)

    @property
    def acked(self) -> int:
        return sum(1 for f in self.files if f.status == "acked")

    @property
    def failed(self) -> int:
        return sum(1 for f in self.files if f.status == "failed")

    @property
    def ok(self) -> bool:
        """Every file acked (or, without tracking, counted)."""
        return all(f.status in ("acked", "counted") for f in self.files)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        text = json.dumps(self.as_dict(), indent=2, ensure_ascii=False) + "\n"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a name that is not UTF-8: escaped, still valid JSON
            text = json.dumps(self.as_dict(), indent=2, ensure_ascii=True) + "\n"
        return text
