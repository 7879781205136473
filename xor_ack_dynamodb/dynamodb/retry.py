"""Backoff for lost optimistic-concurrency races (``StaleLocalData``).

Throttling and transport errors are retried by botocore's own retry modes
(``standard`` by default, configurable): they are a property of the HTTP call,
and a throttled send is known not to have landed (``_attempts``).
A lost race is not: it needs a fresh state and a new XOR before the next write,
so it is retried here, above botocore, with exponential backoff and full jitter
(delay drawn uniformly from ``[0, min(max_delay, base_delay * 2**(n-1))]``),
bounded by a number of attempts and by elapsed time.  Kept in a few lines
instead of a retry library because the decision ("was this a lost race, and do
we have a fresher state already") belongs to the sans-I/O core and the sleep to
whichever driver, async or sync, runs it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ..errors import InvalidArgument
from .aws import botocore_config  # re-exported for code that imports it from here


@dataclass(frozen=True)
class RetryPolicy:
    """How a client retries a stamp that lost a race.

    ``max_attempts`` counts writes (the first included); ``max_elapsed`` is the
    time budget in seconds from the first attempt.  Pass ``retry=None`` to a
    client for the seed's behaviour: raise ``StaleLocalData`` at the first lost race.
    """

    max_attempts: int = 25
    base_delay: float = 0.005
    max_delay: float = 0.5
    max_elapsed: float = 30.0

    def __post_init__(self) -> None:
        attempts = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise InvalidArgument(
                f"RetryPolicy's max_attempts must be an int >= 1, not {attempts!r}"
            )
        for name in ("base_delay", "max_delay", "max_elapsed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise InvalidArgument(
                    f"RetryPolicy's {name} must be a number of seconds >= 0, not {value!r}"
                )
        if math.isinf(self.base_delay):
            raise InvalidArgument("RetryPolicy's base_delay must be finite (the first back-off)")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Full-jitter delay before write number ``attempt + 1`` (``attempt`` >= 1 failed)."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** min(attempt - 1, 30)))
        return (rng or random).uniform(0.0, ceiling)

    def allows(self, attempt: int, elapsed: float) -> bool:
        """May another write follow ``attempt`` failed writes after ``elapsed`` seconds?"""
        return attempt < self.max_attempts and elapsed < self.max_elapsed


DEFAULT_RETRY = RetryPolicy()

__all__ = ["DEFAULT_RETRY", "RetryPolicy", "botocore_config"]
