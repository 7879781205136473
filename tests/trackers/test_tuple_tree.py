"""Tuple-tree helpers over every tracker: Acker shards, in-memory Ack, DynamoDB (sync, async)."""

from __future__ import annotations

import multiprocessing
import random
from array import array
from collections.abc import Hashable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB, XorAckDynamoDB
from xor_ack_dynamodb.acker import Acked, Acker, IdGenerator, Nacked, acker_for
from xor_ack_dynamodb.errors import ChainFailed, ChainTimedOut, InvalidArgument, WaitTimeout
from xor_ack_dynamodb.memory import FailReason, PyAck
from xor_ack_dynamodb.table import TableSpec
from xor_ack_dynamodb.tuple_tree import (
    AckerSink,
    AckSink,
    AsyncDynamoDBSink,
    AsyncTupleTree,
    DynamoDBSink,
    Emitted,
    TreeSink,
    TupleRef,
    TupleTree,
    id_from_stamp,
    id_stamp,
)


class Recording:
    """A sink that records every message before passing it on."""

    def __init__(self, inner: TreeSink) -> None:
        self.inner = inner
        self.calls: list[tuple[Any, ...]] = []

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        self.calls.append(("init", anchor_id, value))
        return self.inner.init(anchor_id, value, task_id=task_id, source_id=source_id)

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        self.calls.append(("xor", anchor_id, value, token))
        return self.inner.xor(anchor_id, value, token=token)

    def fail(self, anchor_id: int) -> None:
        self.calls.append(("fail", anchor_id))
        self.inner.fail(anchor_id)


def process_tree(
    tree: TupleTree, rnd: random.Random, *, roots: int, max_children: int, max_depth: int
) -> tuple[int, list[bool]]:
    """Run a random topology to the end, processing tuples in a random order.

    Each bolt acks its input and anchors its children in one call, and only
    then are the children put where other bolts can pick them up.  Returns the
    anchor id and, per bolt ack, whether the sink reported the tree complete.
    """
    started = tree.start(roots, task_id="spout-0", source_id="row-1")
    assert not started.completed
    queue = [(ref, 0) for ref in started.roots]
    completions: list[bool] = []
    while queue:
        ref, depth = queue.pop(rnd.randrange(len(queue)))
        n = rnd.randint(0, max_children) if depth < max_depth else 0
        emitted = tree.ack(ref, children=n)
        assert len(emitted.children) == n
        assert all(child.anchor_id == started.anchor_id for child in emitted.children)
        completions.append(emitted.completed)
        queue.extend((child, depth + 1) for child in emitted.children)
    return started.anchor_id, completions


# -- ids, references -------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, -1, 2**63 - 1, -(2**63), 0x0102030405060708])
def test_id_stamps_are_8_byte_twos_complement(value: int) -> None:
    stamp = id_stamp(value)
    assert len(stamp) == 8 and id_from_stamp(stamp) == value
    assert stamp == value.to_bytes(8, "big", signed=True)


def test_id_stamp_errors() -> None:
    with pytest.raises(ValueError):
        id_stamp(2**63)
    with pytest.raises(ValueError):
        id_from_stamp(b"\x01")


def _released_view() -> memoryview:
    view = memoryview(bytes(8))
    view.release()
    return view


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(5, id="an int"),
        pytest.param("abcdefgh", id="a str of 8 characters"),
        pytest.param(None, id="None"),
        pytest.param([1] * 8, id="a list of 8 ints"),
        pytest.param(b"\x01" * 9, id="9 bytes"),
        pytest.param(memoryview(array("H", range(8))), id="8 items of 2 bytes"),
        pytest.param(_released_view(), id="a released memoryview"),
    ],
)
def test_id_from_stamp_refuses_anything_but_8_bytes_with_invalid_argument(bad: Any) -> None:
    """A non-bytes used to get a raw ``TypeError`` (``len()``, ``int.from_bytes``), and a
    memoryview of 8 wide items was read as its 16 bytes."""
    with pytest.raises(InvalidArgument, match="id stamp"):
        id_from_stamp(bad)


def test_id_from_stamp_reads_any_bytes_like_by_its_bytes() -> None:
    stamp = id_stamp(-5)
    assert id_from_stamp(bytearray(stamp)) == id_from_stamp(memoryview(stamp)) == -5
    wide = memoryview(array("H", [1, 2, 3, 4]))  # 4 items, 8 bytes
    assert id_from_stamp(wide) == int.from_bytes(wide.tobytes(), "big", signed=True)


def test_tuple_ref_wire_format() -> None:
    ref = TupleRef(-5, 42)
    assert str(ref) == "-5:42"
    assert TupleRef.parse("-5:42") == ref
    for bad in ("5", "5:6:7", "a:1", "1:", str(2**63) + ":1"):
        with pytest.raises(ValueError):
            TupleRef.parse(bad)


# -- one folded stamp per bolt ---------------------------------------------------------------


def test_a_bolt_ack_and_its_children_travel_as_one_folded_stamp() -> None:
    sink = Recording(AckerSink([Acker()]))
    tree = TupleTree(sink, IdGenerator(seed=1))
    started = tree.start()
    (root,) = started.roots
    assert sink.calls == [("init", started.anchor_id, root.tuple_id)]
    emitted = tree.ack(root, children=3)
    folded = root.tuple_id
    for child in emitted.children:
        folded ^= child.tuple_id
    assert sink.calls[1:] == [("xor", started.anchor_id, folded, None)]
    assert not emitted.completed
    results = [tree.ack(child) for child in emitted.children]
    assert [r.completed for r in results] == [False, False, True]
    assert len(sink.calls) == 2 + 3  # FsShelter would send 1 + 1 + 3 + 1 + 3


def test_spout_with_several_roots_sends_one_track() -> None:
    acker = Acker()
    sink = Recording(AckerSink([acker]))
    tree = TupleTree(sink, IdGenerator(seed=2))
    started = tree.start(3, task_id="spout-7", source_id="msg-9")
    assert len(started.roots) == 3 and len({r.tuple_id for r in started.roots}) == 3
    assert len(sink.calls) == 1
    outcomes: list[Acked | Nacked] = []
    acker.on("acked", outcomes.append)
    for ref in started.roots:
        tree.ack(ref)
    assert outcomes == [Acked(started.anchor_id, "spout-7", "msg-9")]


def test_children_are_anchored_before_they_are_processed() -> None:
    """Depth-first, with each child processed right after its parent's ack returns."""
    acker = Acker()
    tree = TupleTree(AckerSink([acker]), IdGenerator(seed=3))
    started = tree.start()
    completions: list[bool] = []

    def bolt(ref: TupleRef, depth: int) -> None:
        emitted = tree.ack(ref, children=2 if depth < 4 else 0)
        completions.append(emitted.completed)
        for child in emitted.children:
            bolt(child, depth + 1)

    bolt(started.roots[0], 0)
    assert completions == [False] * (len(completions) - 1) + [True]
    assert len(completions) == 2**5 - 1


def test_emit_while_working_then_ack() -> None:
    acker = Acker()
    tree = TupleTree(AckerSink([acker]), IdGenerator(seed=4))
    (root,) = tree.start().roots
    first = tree.emit(root, 2)
    second = tree.emit(root, 1, offset=1)
    assert tree.ack(root).completed is False
    done = [tree.ack(child).completed for child in (*first, *second)]
    assert done == [False, False, True]


def test_bolt_fail_fails_the_tree_at_the_spout() -> None:
    acker = Acker()
    outcomes: list[Acked | Nacked] = []
    acker.on("failed", outcomes.append)
    tree = TupleTree(AckerSink([acker]), IdGenerator(seed=5))
    started = tree.start(task_id="spout-1", source_id="row-3")
    emitted = tree.ack(started.roots[0], children=2)
    tree.ack(emitted.children[0])
    tree.fail(emitted.children[1])
    assert outcomes == [Nacked(started.anchor_id, "spout-1", "row-3", FailReason.FAILED)]


def test_helper_argument_errors() -> None:
    tree = TupleTree(AckerSink([Acker()]))
    (root,) = tree.start().roots
    with pytest.raises(ValueError):
        tree.start(0)
    with pytest.raises(ValueError):
        tree.ack(root, children=-1)
    with pytest.raises(ValueError):
        tree.emit(root, 0)
    with pytest.raises(ValueError):
        tree.emit(root, 1, offset=-1)
    with pytest.raises(ValueError):
        TupleTree(AckerSink([Acker()]), lambda: 0).start()
    for nothing in ([], iter([]), (a for a in [])):  # an empty iterator too, not a hang later
        with pytest.raises(InvalidArgument, match="at least one Acker"):
            AckerSink(nothing)
    assert len(AckerSink(iter([Acker(), Acker()])).ackers) == 2
    # each was a raw TypeError or AttributeError, some at the first tree's start
    for odd in (5, None):
        with pytest.raises(InvalidArgument, match="give a list of Acker"):
            AckerSink(odd)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="each one must be an Acker"):
        AckerSink([Acker(), "acker"])  # type: ignore[list-item]
    for sink in (object(), None):
        with pytest.raises(InvalidArgument, match="has no init"):
            TupleTree(sink)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="next_id=5"):
        TupleTree(AckerSink([Acker()]), 5)  # type: ignore[arg-type]


def test_a_tuple_id_of_zero_is_refused_instead_of_hanging_the_bolt() -> None:
    """Ids are never 0: a reference "anchor:0" (a corrupt message) must not loop forever."""
    sink = Recording(AckerSink([Acker()]))
    tree = TupleTree(sink, IdGenerator(seed=6))
    started = tree.start()
    with pytest.raises(InvalidArgument, match="never 0"):
        TupleRef.parse(f"{started.anchor_id}:0")
    zero = TupleRef(started.anchor_id, 0)
    with pytest.raises(InvalidArgument, match="never 0"):
        tree.ack(zero)
    with pytest.raises(InvalidArgument, match="never 0"):
        tree.emit(zero, 1)
    with pytest.raises(InvalidArgument, match="int64"):
        TupleTree(sink, deterministic=True).ack(TupleRef(started.anchor_id, 2**64))
    with pytest.raises(InvalidArgument, match=r"TupleRef\.parse"):
        tree.fail(str(started.roots[0]))  # type: ignore[arg-type]
    assert len(sink.calls) == 1  # the Track only: nothing was sent for the refused calls
    assert tree.ack(started.roots[0]).completed


def test_a_tree_refuses_a_sink_of_the_other_kind_before_anything_is_written() -> None:
    # A blocking tree over an async sink got coroutines back: truthy "completed", nothing
    # written; an async tree over a blocking sink wrote, then failed to await the answer.
    class Awaiting:  # an async sink of a user's
        async def init(self, anchor_id: int, value: int, **_: object) -> bool:
            return False

        async def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
            return False

        async def fail(self, anchor_id: int) -> None:
            pass

    with pytest.raises(InvalidArgument, match="AsyncTupleTree"):
        TupleTree(Awaiting())  # type: ignore[arg-type]
    acker = Acker()
    with pytest.raises(InvalidArgument, match="use TupleTree"):
        AsyncTupleTree(AckerSink([acker]))  # type: ignore[arg-type]
    assert len(acker) == 0


# -- random topologies over the in-process trackers ---------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_random_topologies_over_sharded_ackers(seed: int) -> None:
    rnd = random.Random(seed)
    ackers = [Acker() for _ in range(3)]
    acked: list[Acked] = []
    for acker in ackers:
        acker.on("acked", acked.append)
    tree = TupleTree(AckerSink(ackers), IdGenerator(seed=seed))
    for _ in range(5):
        anchor_id, completions = process_tree(
            tree, rnd, roots=rnd.randint(1, 3), max_children=3, max_depth=4
        )
        assert completions == [False] * (len(completions) - 1) + [True]
        assert acked[-1].anchor_id == anchor_id
        assert acker_for(ackers, anchor_id).stats.acked >= 1
    assert sum(len(a) for a in ackers) == 0 and len(acked) == 5


@pytest.mark.parametrize("seed", range(10))
def test_random_topologies_over_the_in_memory_ack(Ack: type[PyAck], seed: int) -> None:
    rnd = random.Random(seed)
    ack = Ack(timeout=60)
    acked: list[str] = []
    ack.on("acked", acked.append)
    sink = AckSink(ack, prefix="job-1/")
    tree = TupleTree(sink, IdGenerator(seed=seed))
    anchor_id, completions = process_tree(tree, rnd, roots=2, max_children=3, max_depth=4)
    assert completions == [False] * (len(completions) - 1) + [True]
    assert acked == [f"job-1/{anchor_id}"]
    assert len(ack) == 0 and ack.stats.unclaimed == 0


def test_in_memory_ack_tree_times_out(Ack: type[PyAck]) -> None:
    ack = Ack(buckets=2)
    failed: list[tuple[str, str]] = []
    ack.on("failed", lambda tag, reason: failed.append((tag, reason)))
    tree = TupleTree(AckSink(ack), IdGenerator(seed=6))
    started = tree.start()
    tree.ack(started.roots[0], children=1)  # the child is lost
    ack.tick()
    ack.tick()
    assert failed == [(str(started.anchor_id), "timeout")]


def test_deterministic_children_repeat_for_the_same_input() -> None:
    sink = Recording(AckerSink([Acker()]))
    tree = TupleTree(sink, IdGenerator(seed=7), deterministic=True)
    (root,) = tree.start().roots
    first = tree._plan.children(root, 3, b"a", root.tuple_id)
    again = tree._plan.children(root, 3, b"a", root.tuple_id)
    other_call = tree._plan.children(root, 3, b"e\x00\x00\x00\x00", 0)
    assert first == again
    assert not {c.tuple_id for c in first[0]} & {c.tuple_id for c in other_call[0]}
    emitted = tree.ack(root, children=3)
    assert emitted.children == first[0]
    assert sink.calls[-1][3] == b"a" + root.tuple_id.to_bytes(8, "big", signed=True)


# -- over DynamoDB: the tree's state shared by processes ----------------------------------------


def test_random_topologies_over_dynamodb(backend: tuple[str, TableSpec]) -> None:
    endpoint, spec = backend
    rnd = random.Random(11)
    with SyncXorAckDynamoDB.connect(
        table=spec.name, endpoint_url=endpoint, region_name="us-east-1"
    ) as client:
        sink = Recording(DynamoDBSink(client, prefix="job-7/", ttl=600))
        tree = TupleTree(sink, IdGenerator(seed=11))
        for _ in range(2):
            anchor_id, completions = process_tree(tree, rnd, roots=2, max_children=3, max_depth=3)
            assert completions == [False] * (len(completions) - 1) + [True]
            state = client.get(f"job-7/{anchor_id}")
            assert state is not None and state.acked
            assert len(state.stamp) == 8
        # One write per message: a bolt's ack and all its children were one stamp.
        assert client.stats.stamps == sum(1 for call in sink.calls if call[0] == "xor")


def test_failed_tree_over_dynamodb_stops_its_bolts(backend: tuple[str, TableSpec]) -> None:
    endpoint, spec = backend
    with SyncXorAckDynamoDB.connect(
        table=spec.name, endpoint_url=endpoint, region_name="us-east-1"
    ) as client:
        tree = TupleTree(DynamoDBSink(client), IdGenerator(seed=12))
        started = tree.start()
        emitted = tree.ack(started.roots[0], children=2)
        tree.fail(emitted.children[0])
        with pytest.raises(ChainFailed):
            tree.ack(emitted.children[1])
        with pytest.raises(ChainFailed):
            client.wait(str(started.anchor_id), timeout=5)


def test_deterministic_ack_resent_is_applied_once_over_dynamodb(
    backend: tuple[str, TableSpec],
) -> None:
    """A bolt that processes the same input twice (a Lambda retry) does no harm."""
    endpoint, spec = backend
    with SyncXorAckDynamoDB.connect(
        table=spec.name, endpoint_url=endpoint, region_name="us-east-1"
    ) as client:
        tree = TupleTree(DynamoDBSink(client), IdGenerator(seed=13), deterministic=True)
        started = tree.start()
        tag = str(started.anchor_id)
        first = tree.ack(started.roots[0], children=2)
        state = client.get(tag)
        retry = tree.ack(started.roots[0], children=2)  # same input again
        assert retry.children == first.children
        after = client.get(tag)
        assert state is not None and after is not None and after.stamp == state.stamp
        assert [tree.ack(child).completed for child in first.children] == [False, True]


def test_a_tree_whose_bolt_died_fails_by_its_deadline_over_dynamodb(
    backend: tuple[str, TableSpec],
) -> None:
    """TTL is garbage collection: a stalled tree needs a deadline to fail, and the sink sets it."""
    endpoint, spec = backend
    now = [1_900_000_000.0]
    with SyncXorAckDynamoDB.connect(
        table=spec.name, endpoint_url=endpoint, region_name="us-east-1", clock=lambda: now[0]
    ) as client:
        sink = DynamoDBSink(client, prefix="dl/", idle_timeout=30, ttl=3600)
        tree = TupleTree(sink, IdGenerator(seed=16))
        started = tree.start()
        (lost, alive) = tree.ack(started.roots[0], children=2).children  # lost: its bolt died
        now[0] += 20
        tree.ack(alive)  # progress moves the deadline (idle_timeout)
        now[0] += 20
        with pytest.raises(WaitTimeout):  # alive at +40 (its deadline moved): the wait gives up
            client.wait(f"dl/{started.anchor_id}", timeout=0)
        now[0] += 31  # past the deadline: the late bolt's stamp fails the tree, not lands
        with pytest.raises(ChainTimedOut):
            tree.ack(lost)
        with pytest.raises(ChainTimedOut):  # and whoever waits for the tree learns it
            client.wait(f"dl/{started.anchor_id}", timeout=0)


async def test_async_helpers_over_dynamodb(backend: tuple[str, TableSpec]) -> None:
    endpoint, spec = backend
    rnd = random.Random(14)
    async with XorAckDynamoDB.connect(
        table=spec.name, endpoint_url=endpoint, region_name="us-east-1"
    ) as client:
        tree = AsyncTupleTree(AsyncDynamoDBSink(client, prefix="a/"), IdGenerator(seed=14))
        started = await tree.start(2)
        queue = list(started.roots)
        completions: list[bool] = []
        while queue:
            ref = queue.pop(rnd.randrange(len(queue)))
            emitted: Emitted = await tree.ack(ref, children=2 if rnd.random() < 0.4 else 0)
            completions.append(emitted.completed)
            queue.extend(emitted.children)
        assert completions == [False] * (len(completions) - 1) + [True]
        extra_tree = await tree.start()
        children = await tree.emit(extra_tree.roots[0], 1)
        await tree.fail(children[0])
        with pytest.raises(ChainFailed):
            await client.wait(f"a/{extra_tree.anchor_id}", timeout=5)


def _bolt_process(endpoint: str, table: str, ref: str, children: int) -> list[str]:
    """One bolt invocation in another process (as a worker or a Lambda would run it)."""
    with SyncXorAckDynamoDB.connect(
        table=table, endpoint_url=endpoint, region_name="us-east-1"
    ) as client:
        tree = TupleTree(DynamoDBSink(client, prefix="mp/"), deterministic=True)
        emitted = tree.ack(TupleRef.parse(ref), children=children)
        return [str(child) for child in emitted.children]


@pytest.mark.ddblocal
def test_tuple_tree_across_processes_over_dynamodb(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """Bolts in two processes stamp one tree at once.

    DynamoDB Local only: moto's server does not make a conditional write atomic
    under concurrent requests (two racing writes on one item can both pass),
    which loses stamps there -- see tests/core/test_races.py.
    """
    endpoint, spec = ddb_local_endpoint, ddb_table
    with SyncXorAckDynamoDB.connect(
        table=spec.name, endpoint_url=endpoint, region_name="us-east-1"
    ) as client:
        spout = TupleTree(DynamoDBSink(client, prefix="mp/"), IdGenerator(seed=15))
        started = spout.start(2)
        tag = f"mp/{started.anchor_id}"
        frontier = [(str(ref), 0) for ref in started.roots]
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
            while frontier:
                futures = [
                    (pool.submit(_bolt_process, endpoint, spec.name, ref, fanout), depth)
                    for ref, depth in frontier
                    for fanout in [2 if depth < 2 else 0]
                ]
                frontier = [
                    (child, depth + 1) for future, depth in futures for child in future.result()
                ]
        state = client.wait(tag, timeout=30)
        assert state.acked


REGION = "us-east-1"


# -- a DynamoDB sink given the other flavour of client ----------------------------------------


async def test_an_async_sink_refuses_a_sync_client_before_anything_is_written(
    moto_endpoint: str, moto_table: TableSpec
) -> None:
    """A user builds ``AsyncTupleTree(AsyncDynamoDBSink(sync_client))`` -- the sync client
    where the async one belongs (both are "the DynamoDB client" to them).

    They see: ``await tree.start()`` *creates the tree in the table* (the blocking
    ``create`` runs), then dies with a bare ``TypeError: object Stamp can't be used in
    'await' expression``; the spout never gets its root refs, so the tree it wrote is
    left to time out.  Should see: a typed ``InvalidArgument`` naming the mix-up (as
    ``AsyncTupleTree(AckerSink(...))`` and ``XorAckDynamoDB(boto3_client)`` give) and
    nothing written -- the guard ``_Driver.__init__`` has for the sink's kind, not
    applied to the sink's client.
    """
    with SyncXorAckDynamoDB.connect(
        table=moto_table.name, endpoint_url=moto_endpoint, region_name=REGION
    ) as client:
        raised: BaseException | None = None
        try:
            tree = AsyncTupleTree(AsyncDynamoDBSink(client, prefix="mix/"), IdGenerator(seed=1))  # type: ignore[arg-type]
            await tree.start()
        except Exception as exc:
            raised = exc
        written = [chain.tag for chain in client.list_chains("open")]
        assert isinstance(raised, InvalidArgument), f"got {raised!r}"
        assert written == [], f"the refused start wrote {written}"


async def test_a_sync_sink_refuses_an_async_client(
    moto_endpoint: str, moto_table: TableSpec
) -> None:
    """A user builds ``TupleTree(DynamoDBSink(async_client))``.

    They see: ``tree.start()`` raises a bare ``AttributeError: 'coroutine' object has no
    attribute 'acked'`` plus a "coroutine was never awaited" warning.  Should see: a typed
    ``InvalidArgument`` (an ``XorAckError``) saying to use ``AsyncDynamoDBSink`` /
    ``AsyncTupleTree`` for the async client.
    """
    async with XorAckDynamoDB.connect(
        table=moto_table.name, endpoint_url=moto_endpoint, region_name=REGION
    ) as client:
        with pytest.raises(InvalidArgument, match="AsyncDynamoDBSink"):
            DynamoDBSink(client, prefix="mix/")  # type: ignore[arg-type]


def test_an_ack_sink_refuses_an_acker() -> None:
    """A user passes an ``Acker`` to ``AckSink`` (the sink of an in-memory ``Ack``) instead of
    ``AckerSink``.

    They see: the sink and the tree are made, and the first ``tree.start()`` raises a bare
    ``AttributeError: 'Acker' object has no attribute 'add'``.  Should see: a typed
    ``InvalidArgument`` at ``AckSink(...)``, as ``AckerSink`` refuses what is not an
    ``Acker`` (``AckerSink([..., 'acker'])`` -> "each one must be an Acker").
    """
    with pytest.raises(InvalidArgument, match="AckerSink"):
        AckSink(Acker())  # type: ignore[arg-type]


# -- deterministic ids over the in-memory sinks ------------------------------------------------


@pytest.mark.parametrize("sink_kind", ["acker", "ack"])
def test_a_deterministic_emit_processed_twice_is_applied_once_in_memory(
    sink_kind: str,
) -> None:
    """``TupleTree(sink, deterministic=True)``: "an input processed twice yields the same
    children and the same stamp ... so processing the same input again is harmless".

    A bolt emits 2 children of its input while it works (``emit``), is re-run on the same
    input (a redelivery) and emits again with the same call, then acks the input.  Over
    DynamoDB the second emit carries the same token and lands once.  Over the in-memory
    sinks the token is dropped, the same ``c1 ^ c2`` is XORed in twice and cancels, and
    the ack of the input brings the tree to zero: the user sees the tree **acked while
    both children are still pending** (``completed`` True, the ``acked`` listener called).
    Should see: the tree pending until the children are acked (or deterministic mode
    refused for sinks that cannot apply a token once).
    """
    acked: list[object] = []
    if sink_kind == "acker":
        acker = Acker()
        acker.on("acked", acked.append)
        sink: AckerSink | AckSink = AckerSink([acker])
    else:
        ack = PyAck()
        ack.on("acked", acked.append)
        sink = AckSink(ack)
    tree = TupleTree(sink, IdGenerator(seed=4), deterministic=True)
    (root,) = tree.start().roots
    children = tree.emit(root, 2)
    again = tree.emit(root, 2)  # the same input processed again: the same children
    assert again == children
    done = tree.ack(root)
    assert not done.completed, "the tree was acked while both children are pending"
    assert acked == []
    assert [tree.ack(child).completed for child in children] == [False, True]
    assert len(acked) == 1 and (sink_kind == "ack" or isinstance(acked[0], Acked))


def _sink(kind: str, tracker: object) -> AckerSink | AckSink:
    return AckerSink([tracker]) if kind == "acker" else AckSink(tracker)  # type: ignore[list-item,arg-type]


@pytest.mark.parametrize("kind", ["acker", "ack"])
def test_a_deterministic_rerun_on_another_bolt_task_is_applied_once(kind: str) -> None:
    """Each bolt task builds its own ``TupleTree(AckSink(ack), deterministic=True)`` over
    the one shared tracker (as the spout does, and as tests/trackers/test_odd_callers.py
    does: "both bolts' stamps reach the tracker").  A bolt task emits 2 children of its
    input, the input is re-delivered to *another* bolt task, which emits the same
    children with the same token; then the input is acked.

    The user sees the tree acked while both children are still pending: the re-run's
    ``c1 ^ c2`` is applied a second time (the token is only known to the first task's
    sink) and cancels the first.  Should see the tree pending until the children are
    acked, as over DynamoDB (the token is the tree's, not one sink object's)."""
    acked: list[object] = []
    tracker: Acker | PyAck = Acker() if kind == "acker" else PyAck()
    tracker.on("acked", acked.append)
    spout = TupleTree(_sink(kind, tracker), IdGenerator(seed=4), deterministic=True)
    task_1 = TupleTree(_sink(kind, tracker), deterministic=True)
    task_2 = TupleTree(_sink(kind, tracker), deterministic=True)
    (root,) = spout.start().roots
    children = task_1.emit(root, 2)
    assert task_2.emit(root, 2) == children  # the re-delivered input: the same write
    done = task_1.ack(root)
    assert not done.completed and acked == [], (
        "the tree was acked while both of its children are pending"
    )


@pytest.mark.parametrize("kind", ["acker", "ack"])
def test_a_tree_started_again_under_an_anchor_that_timed_out_does_not_inherit_its_tokens(
    kind: str,
) -> None:
    """A spout whose ids are reproducible (a seeded ``IdGenerator``, or a ``next_id`` derived
    from the source row so that a replay is recognisable) replays a row whose tree timed
    out in the tracker: the new tree gets the same anchor id and root id, over the same
    long-lived sink; a deterministic bolt acks the root with one child, then the child.

    The user sees the replayed tree never complete (it times out again, and again): the
    root's ack is silently skipped because the sink still holds the timed-out tree's
    token for it (tokens go only when a tree ends *through the sink*; a timeout inside
    the tracker, or ``init`` starting a new tree, does not drop them).  Before
    ``_AppliedTokens`` the replay completed.  Should see the replayed tree complete."""
    acked: list[object] = []
    tracker: Acker | PyAck = Acker(buckets=2) if kind == "acker" else PyAck(buckets=2)
    tracker.on("acked", acked.append)
    sink = _sink(kind, tracker)

    first = TupleTree(sink, IdGenerator(seed=9), deterministic=True)
    started = first.start()
    first.ack(started.roots[0], children=1)  # then the bolt's worker died: the child is lost
    for _ in range(3):
        tracker.tick()  # the tree times out inside the tracker
    state = tracker.state(started.anchor_id if kind == "acker" else str(started.anchor_id))  # type: ignore[arg-type]
    assert state is None  # timed out, forgotten by the tracker

    replay = TupleTree(sink, IdGenerator(seed=9), deterministic=True)
    again = replay.start()  # the replay: the same anchor and root ids
    assert again.anchor_id == started.anchor_id
    (child,) = replay.ack(again.roots[0], children=1).children
    assert replay.ack(child).completed, (
        "the replayed tree did not complete: its root's ack was skipped as a re-run of "
        "the timed-out tree's"
    )
    assert len(acked) == 1
