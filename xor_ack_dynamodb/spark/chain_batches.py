"""The driver's writes on a round's chains, many per request: create, commit stamps, judge.

Per input and round the driver writes twice (the create ``F``, the commit
check's stamp ``C``) and reads once (the chain after the tasks' produce stamps):

- **create**: ``create_many(via="partiql")``, 25 chains per request, each a
  conditional ``INSERT`` (one write unit; it never overwrites a chain); the
  created states are then the client's own (``known_many``: no read), and each
  input's marker row carries its chain as created to the task that stamps it.
  With ``TrackerConfig(partiql=False)``: transactions of 100 (two write units
  per chain) or one request per chain (``transactions=False``).
- **commit**: the chains read after the job (``get_many``, 100 per request),
  then each ``C`` written on the state read (``stamp_on_each``, 25 per
  request); a chain that moved on meanwhile (a late attempt's stamp) is
  stamped as any stamp (a read, and a token it holds is not applied twice).
- **judge**: from the states those writes left (no read): zero: acked; closed
  by the function (``InputRejected``): failed with its reason; else ``fail`` (one
  write each, only for those) and replay.

So a round of ``n`` inputs that all ack costs about ``3 n / 25 + n / 100``
requests, whatever ``n`` is, and replaying ``k`` inputs costs the same for ``k``.

DynamoDB's own errors (botocore's: unreachable, throttled past its retries, access
denied; also as the per-chain errors of a ``*_many`` call) in any of them raise
:class:`Unanswered`, naming the phase: the run stops with ``errors.DynamoDBFailed``.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ..chain import ChainState
from ..dynamodb import Lifetime
from ..dynamodb.sync import SyncXorAckDynamoDB
from ..errors import (
    ChainFailed,
    ChainMoved,
    CreateManyFailed,
    GetManyFailed,
    StampManyFailed,
    TagExists,
    TagNotFound,
    UnsettledWrite,
)
from ..lifecycle import TIMEOUT_REASON, Acked, Failed, failure
from .digest import rows_stamp, stage_token
from .endpoint_watch import EndpointWatch
from .isolation import retryable
from .keyed import Keyed
from .output import said
from .tracker import TrackerConfig, chain_answer, create_chains, stamp_once

#: Requests in flight from the driver to DynamoDB (each up to 25 chains).
DRIVER_CONCURRENCY = 4
#: How an input's chain ended its round: ("acked" or why not, whether that is final).
Outcome = tuple[str, bool]
#: What DynamoDB, or the way to it, raises: not a chain's condition (an ``XorAckError``),
#: or a write whose answer and settling read it lost (``UnsettledWrite``).
DYNAMODB_ERRORS = (BotoCoreError, ClientError, UnsettledWrite)


class Unanswered(Exception):
    """DynamoDB refused or did not answer a request of the driver during ``phase``."""

    def __init__(self, phase: str, cause: BaseException) -> None:
        super().__init__(f"{phase}: {cause}")
        self.phase = phase
        self.cause = cause


def dynamodb_error(exc: BaseException) -> BaseException | None:
    """DynamoDB's own error in ``exc``: itself, or the first of a ``*_many`` call's chains."""
    errors: list[BaseException] = [exc]
    if isinstance(exc, (CreateManyFailed, GetManyFailed, StampManyFailed)):
        errors = list(exc.errors.values())
    return next((e for e in errors if isinstance(e, DYNAMODB_ERRORS)), None)


def said_of(cause: BaseException) -> str:
    """What DynamoDB's error says (``output.said``), and what to do when the answer to the
    chains' PartiQL statements was no DynamoDB error at all.

    DynamoDB names each error (``InternalServerError``, ...); botocore puts the bare HTTP
    status in its place when the body is not DynamoDB's JSON, as moto's server answers a
    statement with parameters (an HTML page, status 500, after botocore's retries).
    """
    text = said(cause)
    if isinstance(cause, ClientError) and cause.operation_name == "BatchExecuteStatement":
        code = str(cause.response.get("Error", {}).get("Code", ""))
        if code.isdigit():
            text += (
                f" (not a DynamoDB error: the endpoint answered the chains' PartiQL statements "
                f"with an HTTP {code} page, as moto's server does, which cannot run them; with "
                "such a server, pass tracker=TrackerConfig(..., partiql=False))"
            )
    return text


@contextlib.contextmanager
def asking(phase: str) -> Iterator[None]:
    """DynamoDB's own errors within raised as :class:`Unanswered` (``phase``); others unchanged."""
    try:
        yield
    except Exception as exc:
        cause = dynamodb_error(exc)
        if cause is None:
            raise
        raise Unanswered(phase, cause) from cause


class RoundChains:
    """The driver's chains client for a run, and what it does with a round's chains."""

    def __init__(
        self,
        tracker: TrackerConfig,
        chains: SyncXorAckDynamoDB,
        keyed: Keyed,
        timeout: float | None = None,
    ) -> None:
        self.tracker = tracker
        #: Each chain's deadline, seconds from its creation (None: none).
        self.timeout = timeout
        self.chains = chains
        self.keyed = keyed
        #: Writes that landed on the judged chains (each chain's version).
        self.writes = 0
        #: The chains the last :meth:`judge` judged, as it found them.
        self.judged: dict[str, ChainState | None] = {}
        self._ahead: tuple[Any, Sequence[str], Future[dict[str, bytes | None]]] | None = None
        #: The chains of the round under way: created, not judged yet.
        self._open: Sequence[str] = ()
        #: The chains :meth:`abandon` could not fail (DynamoDB refused or did not answer).
        self.left_open: list[str] = []
        #: Tags whose create met a live chain (``TagExists``): another run's, never closed here.
        self.held: set[str] = set()
        self.endpoint = EndpointWatch(tracker)

    def create_ahead(self, key: Any, tags: Sequence[str]) -> None:
        """Start creating ``tags`` in a thread (the next page's, while this one's job runs);
        :meth:`created` with the same ``key`` takes them."""
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xor-ack-create-ahead")
        self._ahead = (key, tags, pool.submit(self.create, tags))
        pool.shutdown(wait=False)

    def created(self, key: Any, tags: Sequence[str]) -> dict[str, bytes | None]:
        """``tags`` created: by :meth:`create_ahead` under ``key``, or now."""
        self._open = tags  # from here until judged: failed by :meth:`abandon` if need be
        with asking("create"):
            if self._ahead is not None and self._ahead[0] == key:
                (_, _, future), self._ahead = self._ahead, None
                return future.result()
            return self.create(tags)

    def abandon(
        self, why: str, tell: Callable[[Acked | Failed], None] | None = None
    ) -> BaseException | None:
        """The run stops: the chains no round will judge are failed, none left live.

        Those of the round under way (``its round did not end: WHY``) and those created
        ahead for a page that will not run (``not run: WHY``), once their creation ended;
        each one this call failed is told to ``tell``.  Those DynamoDB does not let it
        fail go to :attr:`left_open`; the first such error is returned.
        """
        open_, self._open = self._open, ()
        ahead, self._ahead = self._ahead, None
        closing = [(tag, f"its round did not end: {why}") for tag in open_]
        if ahead is not None:
            with contextlib.suppress(Exception):  # made or not: each tag is failed below
                ahead[2].result()
            closing += [(tag, f"not run: {why}") for tag in ahead[1]]
        down = self.endpoint.refused() if closing else None  # each fail would retry a minute
        if down is not None:
            self.left_open += [tag for tag, _ in closing if tag not in self.held]
            return down
        errors: list[BaseException] = []
        closed: list[Failed] = []
        _each(
            lambda item: self._close(item[0], item[1], errors, closed),
            closing,
            self.tracker.concurrency,
        )
        if tell is not None:
            for event in closed:
                tell(event)
        return errors[0] if errors else None

    def watching(self) -> Callable[[], Unanswered | None]:
        """What ``TaggedJobs.run`` asks while a round's tasks stamp: ``Unanswered("produce")``
        once the endpoint refused connections for ``UNREACHABLE_AFTER`` seconds in a row
        (counted from this job on)."""
        self.endpoint.restart()

        def watch() -> Unanswered | None:
            refused = self.endpoint.still_refused()
            return None if refused is None else Unanswered("produce", refused)

        return watch

    def _close(
        self, tag: str, reason: str, errors: list[BaseException], closed: list[Failed]
    ) -> None:
        if tag in self.held:  # a live chain of another run holds it: not this run's to close
            return
        try:
            state = self.chains.fail(tag, reason=reason)
        except (ChainFailed, TagNotFound):  # already closed, or never made
            pass
        except DYNAMODB_ERRORS as exc:  # it may stay open: said by the run's error
            self.left_open.append(tag)
            errors.append(exc)
        else:
            if not state.acked:  # acked after all: not closed (judged by no round)
                closed.append(failure(tag, state.chain_id, state.failed_at or 0.0, reason))

    def create(self, tags: Sequence[str]) -> dict[str, bytes | None]:
        """Create the round's chains (stamp ``F``); per tag, its state as created (pickled)."""
        stamps = {tag: self.keyed.file_stamp(tag) for tag in tags}
        life: Lifetime = {} if self.timeout is None else {"timeout": self.timeout}
        try:
            create_chains(self.chains, self.tracker, stamps, **life)
        except CreateManyFailed as exc:
            self.held.update(t for t, e in exc.errors.items() if isinstance(e, TagExists))
            raise
        states = self.chains.known_many(tags)
        return {tag: None if s is None else pickle.dumps(s) for tag, s in states.items()}

    def commit(self, run_id: str, sums: Mapping[str, int]) -> dict[str, ChainState | None]:
        """Each chain's commit stamp ``C`` (``sums``: tag -> its committed rows' sum);
        per tag, the chain as it is after it (None: no chain)."""
        with asking("commit check"):
            return self._commit(run_id, sums)

    def _commit(self, run_id: str, sums: Mapping[str, int]) -> dict[str, ChainState | None]:
        states = self.chains.get_many(list(sums))
        writes: list[tuple[ChainState, bytes, bytes]] = []
        for tag, total in sums.items():
            state = states[tag]
            if state is not None and state.live:
                value = rows_stamp(self.keyed, tag, total)
                writes.append((state, value, stage_token(self.keyed, "commit", tag, value)))
        if not self.tracker.partiql:
            _each(self._stamp, writes, self.tracker.concurrency)
            return self.chains.get_many(list(sums))
        outcomes = self.chains.stamp_on_each(writes, concurrency=DRIVER_CONCURRENCY)
        again: list[tuple[ChainState, bytes, bytes]] = []
        unsure: list[str] = []  # the chain's answer leaves its state unknown: read
        for (state, value, token), outcome in zip(writes, outcomes, strict=True):
            if isinstance(outcome, ChainState):
                states[state.tag] = outcome
            elif isinstance(outcome, ChainMoved):
                states[state.tag] = outcome.current
                if outcome.current is not None and outcome.current.live:
                    again.append((outcome.current, value, token))
            elif not chain_answer(outcome):
                raise outcome  # DynamoDB's error (the round fails), or a defect
            else:
                unsure.append(state.tag)
        if again:  # moved on by a late stamp: stamped as any stamp
            _each(self._stamp, again, self.tracker.concurrency)
        if again or unsure:
            states.update(self.chains.get_many([state.tag for state, _, _ in again] + unsure))
        return states

    def _stamp(self, write: tuple[ChainState, bytes, bytes]) -> None:
        """One commit stamp on the state read, or as any stamp if the chain moved on."""
        state, value, token = write
        stamp_once(self.chains, state.tag, value, token, state)

    def judge(
        self,
        tags: Sequence[str],
        states: Mapping[str, ChainState | None] | None,
        job_error: str | None,
        tell: Callable[[Acked | Failed], None],
    ) -> list[Outcome]:
        """Per chain of a round: ``acked`` or why not, and whether that is final.

        ``states``: the chains as the commit left them (None: the round's job
        failed, they are read).  A zero chain of a round whose output was
        committed is acked.  A chain the user's function closed
        (``InputRejected``) fails for good with its reason; one whose function raised
        (``isolation.retryable``) fails this attempt only.  Any other is closed with
        ``fail`` (late stamps are refused) and its input replayed.
        """
        with asking("judge"):
            known = dict(states) if states is not None else self.chains.get_many(tags)
        self.judged = known
        outcomes = [self._judge_one(tag, known.get(tag), job_error, tell) for tag in tags]
        self._open = ()
        return outcomes

    def _judge_one(
        self,
        tag: str,
        state: ChainState | None,
        job: str | None,
        tell: Callable[[Acked | Failed], None],
    ) -> Outcome:
        if state is not None and state.failed:  # closed by its task: the function failed
            self.writes += state.version
            tell(failure(tag, state.chain_id, state.failed_at or 0.0, _why(state)))
            # Its deadline passed (a sweep, or a late write, failed it "timeout"): replayed
            # as an input whose function raised, not counted against max_errors.
            again = retryable(state.reason) or state.reason == TIMEOUT_REASON
            return _why(state), not again
        if job is None and state is not None and state.acked:
            self.writes += state.version
            latency = (state.acked_at or state.updated_at) - state.created_at
            tell(Acked(tag, state.chain_id, state.acked_at or 0.0, latency))
            return "acked", False
        reason = job or _incomplete(state)
        try:
            with asking("judge"):
                closed = self.chains.fail(tag, reason=reason)
        except TagNotFound:
            return "chain missing", False
        except ChainFailed as already:  # failed since the read (its stage, a sweep, a deadline)
            return self._judge_one(tag, already.state, job, tell)  # judged as found
        self.writes += closed.version
        if closed.acked:
            return "completed after its round ended (not counted)", False
        tell(failure(tag, closed.chain_id, closed.failed_at or 0.0, reason))
        return reason, False


def _why(state: ChainState) -> str:
    return state.reason or "failed"


#: A chain's writes after a round that went as planned: the create, the produce stamp of
#: the attempt of its task that ran, and the commit check's stamp.
PLANNED_WRITES = 3


def _incomplete(state: ChainState | None) -> str:
    """Why a chain is not zero after a round whose job ran (what it tells of the cause).

    A chain with more writes than a round makes was stamped by two attempts of its task
    with different stamps (an attempt's stamp sent again lands once): they returned
    different rows, and no committed output can match both.
    """
    if state is not None and state.version > PLANNED_WRITES:
        return (
            "incomplete: its task ran more than once and the attempts returned different "
            "rows (is the function deterministic?)"
        )
    return "incomplete: not zero when its round ended"


def _each(fn: Callable[[Any], object], items: Sequence[Any], concurrency: int) -> None:
    """``fn`` over ``items``, ``concurrency`` at a time (one request each)."""
    if not items:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(items)))) as pool:
        list(pool.map(fn, items))
