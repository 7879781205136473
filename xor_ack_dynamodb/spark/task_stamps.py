"""A task's produce stamps, 25 per request, sent while the task's next inputs run.

Each input's stamp ``F ^ D`` is written on its chain as the driver created it
(the marker row carries it): with the tracker's ``partiql`` (the default) the
task gathers them and sends each 25 as one ``stamp_on_each`` (PartiQL
statements, each its own conditional write), at most ``IN_FLIGHT`` requests at
a time, in threads, while the user's function goes on with the next inputs.
Leaving the block sends the rest and waits for every one; the first error that
is not the chain's own refusal is raised (the task fails and Spark runs it
again: the same stamps, the same tokens, never applied twice).

A chain that moved on (a re-run attempt's stamp landed first, the driver closed
it) refuses the write (``ChainMoved``): if its current state holds the stamp's
token the stamp is in; if it is still live, the stamp goes as any stamp (a
read, then the token decides); a closed chain takes no stamp.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from ..chain import ChainState
from ..errors import ChainMoved
from .tracker import chain_answer, chains_for, stamp_once

if TYPE_CHECKING:
    from .stages import RoundSpec

#: Stamps per request (DynamoDB's limit of statements per BatchExecuteStatement).
BATCH = 25
#: Requests of one task in flight at once.
IN_FLIGHT = 2

Stamp = tuple[str, bytes, bytes, ChainState | None]


class TaskStamps:
    """``send`` each input's stamp; leaving the block waits for all (see the module)."""

    def __init__(self, spec: RoundSpec) -> None:
        self.spec = spec
        self.pool: ThreadPoolExecutor | None = None
        self.sent: list[Future[None]] = []
        self.waiting: list[Stamp] = []

    def send(self, tag: str, value: bytes, token: bytes, known: ChainState | None) -> None:
        self.waiting.append((tag, value, token, known))
        tracker = self.spec.tracker
        size = BATCH if tracker is not None and tracker.partiql else 1
        if len(self.waiting) >= size:
            self._flush()

    def _flush(self) -> None:
        if not self.waiting:
            return
        if self.pool is None:
            assert self.spec.tracker is not None
            workers = IN_FLIGHT if self.spec.tracker.partiql else self.spec.tracker.concurrency
            self.pool = ThreadPoolExecutor(max_workers=workers)
        batch, self.waiting = self.waiting, []
        self.sent.append(self.pool.submit(_write, self.spec, batch))

    def drain(self) -> None:
        """Wait until every request sent so far is written (the pool's threads idle): a
        fork (an isolated input's child process) then copies no lock a thread holds."""
        if self.sent:
            wait(self.sent)

    def __enter__(self) -> TaskStamps:
        return self

    def __exit__(self, error: type[BaseException] | None, *rest: object) -> None:
        if error is None:
            self._flush()
        if self.pool is None:
            return
        self.pool.shutdown(wait=True)
        if error is None:  # else the task fails already, with its own error
            for future in self.sent:
                future.result()


def _write(spec: RoundSpec, batch: list[Stamp]) -> None:
    """Write a batch of stamps: on their chains as known, 25 per request; the rest alone."""
    assert spec.tracker is not None
    chains = chains_for(spec.tracker)
    on_state = [(known, value, token) for _, value, token, known in batch if known is not None]
    alone = [(tag, value, token) for tag, value, token, known in batch if known is None]
    if on_state and spec.tracker.partiql:
        for (_, value, token), outcome in zip(
            on_state, chains.stamp_on_each(on_state, concurrency=1), strict=True
        ):
            if isinstance(outcome, ChainMoved):
                current = outcome.current
                if current is not None and current.live and token not in current.tokens:
                    alone.append((current.tag, value, token))
            elif isinstance(outcome, Exception) and not chain_answer(outcome):
                raise outcome  # the task fails, and its retry sends the same tokens
    else:
        for known, value, token in on_state:
            stamp_once(chains, known.tag, value, token, known)
    for tag, value, token in alone:
        stamp_once(chains, tag, value, token, None)
