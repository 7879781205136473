"""What one round of the job is about, shipped to every task (a Spark broadcast)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .faults import FaultConfig
from .tracker import TrackerConfig


@dataclass(frozen=True)
class TaskInfo:
    """The task attempt a stage function runs in (from Spark's ``TaskContext``)."""

    partition: int
    attempt: int = 0


@dataclass(frozen=True)
class RoundPlan:
    """Round ``round`` (attempt number of every file in it) of run ``run_id``.

    ``paths[i]`` is the i-th file of the round, ``file_ids[i]`` its id in the
    whole run (the staging rows carry it), ``tags[i]`` its chain (empty when
    tracking is off).  ``partitions`` is the number of counting tasks.
    """

    run_id: str
    round: int
    partitions: int
    paths: tuple[str, ...]
    file_ids: tuple[int, ...]
    tags: tuple[str, ...] = ()
    tracker: TrackerConfig | None = None
    faults: FaultConfig = field(default_factory=FaultConfig)

    def __post_init__(self) -> None:
        if self.partitions < 1:
            raise ValueError("partitions must be >= 1")
        if len(self.file_ids) != len(self.paths):
            raise ValueError("paths and file_ids differ in length")
        if self.tags and len(self.tags) != len(self.paths):
            raise ValueError("paths and tags differ in length")
        if self.tags and self.tracker is None:
            raise ValueError("a tracked round needs a tracker")

    @property
    def tracking(self) -> bool:
        return bool(self.tags)

    def positions(self) -> dict[str, int]:
        return {path: i for i, path in enumerate(self.paths)}


def file_tag(run_id: str, path: str, attempt: int, *, limit: int = 1024) -> str:
    """The chain of one attempt at one file: ``run_id/path#attempt``.

    A late stamp of an old attempt can never touch the replay's chain.  Paths
    too long for a DynamoDB key, or that are not valid UTF-8 (a file name's
    bytes), are replaced by their SHA-256.
    """
    tag = f"{run_id}/{path}#{attempt}"
    try:
        if len(tag.encode("utf-8")) <= limit:
            return tag
    except UnicodeEncodeError:
        pass
    import hashlib

    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{run_id}/sha256:{digest}#{attempt}"
