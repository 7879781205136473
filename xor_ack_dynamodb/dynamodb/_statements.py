"""Many chains' first writes as PartiQL statements, 25 per request: creates and stamps on states.

``create_many(via="partiql")`` and ``stamp_on_each`` run the core's own operation
per chain (``create``; ``stamp_on`` on the caller's state), all at once:
:func:`gather` steps them together, and the first write of each, where it has a
PartiQL form, goes out with up to 24 others in one ``BatchExecuteStatement``
(``_batches.Batcher.send``: a create as an ``INSERT``, a stamp as the ``UPDATE``
of its conditional write).  Each gets back the response or the error its own
``UpdateItem`` would have had and goes on from there exactly as it would alone
(a read, a re-send, a refusal), its later requests sent one by one.  So every
decision stays the core's, row for row of ``landing``'s tables; this module only
decides which requests go together, and is sans-I/O like the core.

An ``INSERT`` never overwrites: any item under the key refuses it
(``DuplicateItem``, which ``_batches`` answers to the create as its failed
condition, without the item), so the create reads the item and goes on as
``create`` does: its own token there (a re-sent batch that had landed):
created; a live chain: ``TagExists``; a closed or expired one: written again,
alone, as the ``UpdateItem`` whose condition lets a closed chain be replaced.

Why statements and not transactions of 100 (``create_many``'s default) or
``BatchWriteItem``: ``BatchWriteItem`` has no condition (a put would overwrite a
live chain), and a transaction costs two write units per item where a statement
costs one, and fails whole where a statement fails alone.  The price is 25
chains per request instead of 100; ``docs/spark.md`` has the measured figures.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ..chain import ChainState
from ..errors import CorruptItem, XorAckError
from ..stamps import Stamp
from ._batches import MAX_BATCH_STATEMENTS, Batcher, Write
from ._core.effects import Call, Effect, Entry, Op, Outcome
from ._core.many import Chains
from ._core.validate import Lifetime

#: What one chain's operation may end with instead of a result: its outcome, not the call's.
ENDS = (XorAckError, ClientError, BotoCoreError)
#: What a stamp on a state came to: the chain as it left it, or the error that kept it out.
OnState = ChainState | Exception


def statement_of(effect: Effect) -> dict[str, Any] | None:
    """The PartiQL form of a write the core yields: its ``UPDATE``, or a create's ``INSERT``."""
    if not isinstance(effect, Call) or effect.batch is None or effect.op != "update_item":
        return None
    return effect.batch.statement() or effect.batch.insert()


def pieces(count: int, size: int = MAX_BATCH_STATEMENTS) -> list[range]:
    """``range(count)`` cut into consecutive pieces of at most ``size`` (one request each)."""
    return [range(start, min(start + size, count)) for start in range(0, count, size)]


def gather(
    ops: Sequence[Op], batcher: Batcher, size: int = MAX_BATCH_STATEMENTS
) -> Generator[Effect, Any, list[Any]]:
    """Run ``ops`` together; return each one's result (or the error it ended with, ``ENDS``).

    The first request of every operation that is a write with a PartiQL form goes
    out in batches of up to ``size`` statements; every other request (a read, a
    re-send, a write without that form, a sleep) goes alone, one operation at a
    time.  The operations must write distinct items (one request never carries
    two writes of one item).
    """
    results: list[Any] = [None] * len(ops)
    pending: dict[int, Effect] = {}
    first: set[int] = set()

    def step(i: int, answer: Any = None) -> None:
        try:
            if isinstance(answer, BaseException):
                effect = ops[i].throw(answer)
            else:
                effect = ops[i].send(answer)
        except StopIteration as stop:
            results[i] = stop.value
            pending.pop(i, None)
        except ENDS as exc:
            results[i] = exc
            pending.pop(i, None)
        else:
            pending[i] = effect

    for i in range(len(ops)):
        step(i)
    first.update(pending)
    while pending:
        batchable = [i for i in sorted(first) if statement_of(pending[i]) is not None]
        if len(batchable) > 1:
            for part in pieces(len(batchable), size):
                chosen = [batchable[j] for j in part]
                writes = []
                for i in chosen:
                    call = pending[i]
                    assert isinstance(call, Call)
                    writes.append(Write(call.params, statement_of(call) or {}, None))
                answers = yield from batcher.send(writes)
                for i, answer in zip(chosen, answers, strict=True):
                    first.discard(i)
                    step(i, answer)
            continue
        i = min(pending)
        first.discard(i)
        effect = pending[i]
        if not isinstance(effect, Call):
            yield effect
            step(i)
            continue
        try:
            response = yield effect
        except (ClientError, BotoCoreError) as exc:
            step(i, exc)
        else:
            step(i, response)
    return results


def create_each(
    core: Chains, batcher: Batcher, stamps: Mapping[str, Stamp], lifetime: Lifetime
) -> Generator[Effect, Any, dict[str, Outcome]]:
    """``create`` of each chain (``{tag: stamp}``, validated), first writes as ``INSERT``s."""
    ops = [core.create(tag, stamp, **lifetime) for tag, stamp in stamps.items()]
    outcomes = yield from gather(ops, batcher)
    return dict(zip(stamps, outcomes, strict=True))


def _on_state(core: Chains, state: ChainState, entry: Entry) -> Generator[Effect, Any, OnState]:
    """``stamp_on(state, ...)`` with one stamp, ending with the chain as its write left it."""
    landed: dict[str, ChainState] = {}
    try:
        (outcome,) = yield from core.stamp_batch(
            state.tag, [entry], state, exact=True, landed_as=landed
        )
    except CorruptItem as exc:
        return exc
    if isinstance(outcome, Exception):
        return outcome
    return landed.get(state.tag, state)  # not written: the state holds the stamp's token already


def stamp_on_each(
    core: Chains, batcher: Batcher, writes: Sequence[tuple[ChainState, Entry]]
) -> Generator[Effect, Any, list[OnState]]:
    """One stamp on each given state (distinct chains, validated), writes as ``UPDATE``s."""
    ops = [_on_state(core, state, entry) for state, entry in writes]
    outcomes: list[OnState] = yield from gather(ops, batcher)
    return outcomes
