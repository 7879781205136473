"""Fault injection: task attempts that crash, and attempts that silently lose records.

Every decision is drawn from a random generator seeded by
``(seed, round, stage, partition, attempt number)``, so a run is reproducible
and a re-run attempt (a new attempt number) draws afresh, as a real retry
would meet different luck.  Two kinds of fault, each with its own rate:

- **crash**: the attempt raises :class:`InjectedFault`, before or after it
  stamped (chosen at random); Spark retries the task.  A crash after the stamp
  is the case that makes idempotent stamps necessary.
- **drop**: the attempt loses one to three of its records *after* its stamps
  were computed (stage 1: the stamp declares records that are never emitted;
  stage 2: records are lost before the count and its stamp).  Nothing fails:
  only the tracker can notice, and it does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TypeVar

from .errors import InvalidArgument

T = TypeVar("T")

#: Most records a dropping attempt loses.
MAX_DROPPED = 3


class InjectedFault(RuntimeError):
    """A task attempt crashed on purpose (``--fail-rate``); Spark retries the task."""


@dataclass(frozen=True)
class FaultConfig:
    """What to inject.  ``max_attempt``: only into attempts numbered below it (None: all)."""

    crash_rate: float = 0.0
    drop_rate: float = 0.0
    seed: int = 0
    max_attempt: int | None = None

    def __post_init__(self) -> None:
        for name in ("crash_rate", "drop_rate"):
            rate = getattr(self, name)
            number = not isinstance(rate, bool) and isinstance(rate, int | float)
            if not number or not 0.0 <= rate <= 1.0:
                raise InvalidArgument(f"{name} must be between 0 and 1, got {rate!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidArgument(f"seed must be an int, got {self.seed!r}")
        attempt = self.max_attempt
        if attempt is not None and (
            isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0
        ):
            raise InvalidArgument(f"max_attempt must be None or an int >= 0, got {attempt!r}")

    @classmethod
    def rate(cls, rate: float, seed: int = 0) -> FaultConfig:
        """Both kinds at the same rate (the CLI's ``--fail-rate R --seed N``)."""
        return cls(crash_rate=rate, drop_rate=rate, seed=seed)

    @property
    def enabled(self) -> bool:
        return self.crash_rate > 0 or self.drop_rate > 0

    def for_task(self, round_: int, stage: int, partition: int, attempt: int) -> TaskFaults:
        rng = random.Random(f"xor-ack-faults/{self.seed}/{round_}/{stage}/{partition}/{attempt}")
        eligible = self.max_attempt is None or attempt < self.max_attempt
        crash = eligible and rng.random() < self.crash_rate
        after = rng.random() < 0.5
        drop = eligible and rng.random() < self.drop_rate
        where = f"round {round_}, stage {stage}, partition {partition}, attempt {attempt}"
        return TaskFaults(crash=crash, crash_after_stamp=after, drop=drop, rng=rng, where=where)


@dataclass
class TaskFaults:
    """The faults one task attempt suffers."""

    crash: bool
    crash_after_stamp: bool
    drop: bool
    rng: random.Random
    where: str = ""

    @classmethod
    def none(cls) -> TaskFaults:
        return cls(crash=False, crash_after_stamp=False, drop=False, rng=random.Random(0))

    def crash_now(self, *, stamped: bool) -> None:
        """Raise if this attempt crashes at this point (before or after its stamps)."""
        if self.crash and self.crash_after_stamp == stamped:
            when = "after" if stamped else "before"
            raise InjectedFault(f"injected crash {when} stamping ({self.where})")

    def lose(self, records: list[T]) -> tuple[list[T], int]:
        """``records`` without the ones this attempt loses, and how many it lost."""
        if not self.drop or not records:
            return records, 0
        k = min(len(records), self.rng.randint(1, MAX_DROPPED))
        lost = set(self.rng.sample(range(len(records)), k))
        return [r for i, r in enumerate(records) if i not in lost], k
