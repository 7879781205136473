"""What a word count run is asked to do (``run_wordcount(spark, WordCountOptions(...))``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from .faults import FaultConfig
from .tracker import TrackerConfig

F = TypeVar("F", bound=Callable[..., Any])


def shown(name: str, kind: Any, default: Any, help: str | None = None) -> Callable[[F], F]:
    """A command-line option of type ``kind`` whose default the help shows."""
    return click.option(name, type=kind, default=default, show_default=True, help=help)


@dataclass
class WordCountOptions:
    """Everything a run needs besides the SparkSession."""

    input: str
    output: str
    tracking: bool = True
    tracker: TrackerConfig | None = None
    #: Shuffle partitions of the counted rows before they are staged; None: Spark's setting.
    partitions: int | None = None
    #: Seconds a round may take; its unfinished files are replayed.
    timeout: float = 300.0
    max_attempts: int = 8
    faults: FaultConfig = field(default_factory=FaultConfig)
    run_id: str | None = None
    work_dir: str | None = None
    keep_staging: bool = False
    #: Replace an existing OUTPUT, if it is a folder this tool wrote (see ``paths``).
    overwrite: bool = False
    output_partitions: int = 1

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
