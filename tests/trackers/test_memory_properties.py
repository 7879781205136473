"""Properties of Ack: random trees complete exactly once, at their last stamp; both cores agree."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xor_ack_dynamodb.memory import CAck, PyAck

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@dataclass
class Tree:
    """A tree of work: node i's parent is parents[i] (node 0 is the root)."""

    parents: list[int]

    def stamps(self, rnd: random.Random, nbytes: int) -> tuple[bytes, list[bytes]]:
        """(the add's stamp, one completion stamp per node: own id ^ its children's ids)."""
        ids = [rnd.getrandbits(8 * nbytes) or 1 for _ in self.parents]
        folded = list(ids)
        for child, parent in enumerate(self.parents):
            if child:
                folded[parent] ^= ids[child]
        return (
            ids[0].to_bytes(nbytes, "big"),
            [v.to_bytes(nbytes, "big") for v in folded],
        )


@st.composite
def trees(draw: st.DrawFn, max_nodes: int = 25) -> Tree:
    n = draw(st.integers(1, max_nodes))
    return Tree([0] + [draw(st.integers(0, i - 1)) for i in range(1, n)])


def apply(ack: PyAck, op: tuple[str, str, bytes]) -> bool:
    verb, tag, stamp = op
    return ack.add(tag, stamp) if verb == "add" else ack.stamp(tag, stamp)


@pytest.mark.parametrize("early", [False, True], ids=["add-first", "add-anywhere"])
@SETTINGS
@given(tree=trees(), seed=st.integers(0, 2**64), nbytes=st.sampled_from([8, 16, 33]))
def test_a_random_tree_completes_exactly_once_at_its_last_stamp(
    Ack: type[PyAck], early: bool, tree: Tree, seed: int, nbytes: int
) -> None:
    rnd = random.Random(seed)  # random ids: hypothesis would pick colliding ones on purpose
    root, node_stamps = tree.stamps(rnd, nbytes)
    rnd.shuffle(node_stamps)
    ops = [("stamp", "t", s) for s in node_stamps]
    ops.insert(rnd.randrange(len(ops) + 1) if early else 0, ("add", "t", root))
    ack = Ack()
    acked: list[str] = []
    ack.on("acked", acked.append)
    results = [apply(ack, op) for op in ops]
    assert results == [False] * (len(ops) - 1) + [True]
    assert acked == ["t"]
    stats = ack.stats
    assert (stats.added, stats.acked, stats.pending, stats.unclaimed) == (1, 1, 0, 0)


@SETTINGS
@given(
    sizes=st.lists(st.integers(1, 8), min_size=1, max_size=12),
    seed=st.integers(0, 2**64),
)
def test_interleaved_trees_each_complete_once(
    Ack: type[PyAck], sizes: list[int], seed: int
) -> None:
    rnd = random.Random(seed)
    ops: list[tuple[str, str, bytes]] = []
    for i, size in enumerate(sizes):
        tree = Tree([0] + [rnd.randrange(j) for j in range(1, size)])
        root, node_stamps = tree.stamps(rnd, 8)
        ops.append(("add", f"t{i}", root))
        ops.extend(("stamp", f"t{i}", s) for s in node_stamps)
    rnd.shuffle(ops)
    ack = Ack()
    acked: list[str] = []
    ack.on("acked", acked.append)
    for op in ops:
        apply(ack, op)
    assert sorted(acked) == sorted(f"t{i}" for i in range(len(sizes)))
    assert len(ack) == 0 and ack.stats.unclaimed == 0


# -- differential: the C core behaves exactly as the pure-Python one ---------------------

TAGS = ["a", "b", "c"]
STAMPS = [b"\x01", b"\x02", b"\x03", b"\x00", b"\x01\x00", b"\x00\x01", bytearray(b"\x02"), ""]
operations = st.one_of(
    st.tuples(st.sampled_from(["add", "stamp"]), st.sampled_from(TAGS), st.sampled_from(STAMPS)),
    st.tuples(st.sampled_from(["fail", "reset_timeout", "state"]), st.sampled_from(TAGS)),
    st.tuples(st.just("tick")),
)


def run(ack: PyAck, ops: list[tuple[Any, ...]]) -> list[Any]:
    trace: list[Any] = []
    ack.on("acked", lambda tag: trace.append(("acked", tag)))
    ack.on("failed", lambda tag, reason: trace.append(("failed", tag, str(reason))))
    for verb, *args in ops:
        try:
            trace.append((verb, getattr(ack, verb)(*args)))
        except Exception as exc:
            trace.append((verb, type(exc).__name__))
    stats = ack.stats
    trace.append(
        (
            stats.added,
            stats.acked,
            stats.failed,
            stats.expired,
            stats.overflowed,
            stats.pending,
            stats.unclaimed,
            stats.orphaned,
            stats.dropped,
        )
    )
    assert stats.added == (
        stats.acked + stats.failed + stats.expired + stats.overflowed + stats.pending
    )
    assert stats.pending + stats.unclaimed == len(ack._chains)
    assert sum(len(bucket) for bucket in ack._buckets) == len(ack._chains)
    return trace


@SETTINGS
@given(
    ops=st.lists(operations, max_size=60),
    high_water=st.one_of(st.none(), st.integers(1, 3)),
    buckets=st.integers(2, 4),
)
def test_random_operations_keep_the_books_balanced(
    Ack: type[PyAck], ops: list[tuple[Any, ...]], high_water: int | None, buckets: int
) -> None:
    run(Ack(buckets=buckets, high_water=high_water), ops)


@pytest.mark.skipif(CAck is None, reason="C extension _ackcore not built")
@SETTINGS
@given(
    ops=st.lists(operations, max_size=60),
    high_water=st.one_of(st.none(), st.integers(1, 3)),
    buckets=st.integers(2, 4),
)
def test_c_core_matches_pure_python(
    ops: list[tuple[Any, ...]], high_water: int | None, buckets: int
) -> None:
    assert CAck is not None
    c_ack: PyAck = CAck(buckets=buckets, high_water=high_water)  # type: ignore[assignment]
    assert run(c_ack, ops) == run(PyAck(buckets=buckets, high_water=high_water), ops)
