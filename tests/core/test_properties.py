"""Property: random trees of work, stamped in random orders and interleavings, complete
exactly once, at the last stamp (in DynamoDB, through the real client)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.table import TableSpec


@dataclass
class Node:
    children: list[Node] = field(default_factory=list)
    id: Stamp = field(default_factory=new_stamp)

    def walk(self) -> list[Node]:
        return [self, *(n for c in self.children for n in c.walk())]

    def finish_stamp(self) -> Stamp:
        """Finishing this node and starting its children: one folded stamp."""
        return xor(self.id, *(c.id for c in self.children)) if self.children else self.id


trees = st.recursive(
    st.just(()), lambda kids: st.lists(kids, min_size=1, max_size=4), max_leaves=12
)


def build(shape: object) -> Node:
    return Node([build(s) for s in shape]) if isinstance(shape, list) else Node()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shapes=st.lists(trees, min_size=1, max_size=3), data=st.data())
def test_random_trees_complete_exactly_once_at_the_last_stamp(
    moto_endpoint: str, moto_table: TableSpec, shapes: list[object], data: st.DataObject
) -> None:
    raw = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    ack = SyncXorAckDynamoDB(raw, table=moto_table.name)
    roots = [build(s) for s in shapes]
    tags = [f"tree-{new_stamp(8).hex()}" for _ in roots]
    work = [(tag, node) for tag, root in zip(tags, roots, strict=True) for node in root.walk()]
    for tag, root in zip(tags, roots, strict=True):
        assert not ack.create(tag, root.id).acked
    order = data.draw(st.permutations(work), label="stamp order")
    # Interleave: consecutive slices of the order go out concurrently (merged per chain).
    sizes = data.draw(
        st.lists(st.integers(min_value=1, max_value=4), min_size=len(order), max_size=len(order)),
        label="concurrency",
    )
    remaining = {tag: sum(1 for t, _ in work if t == tag) for tag in tags}
    acked_at: dict[str, int] = {}
    position = 0
    with ThreadPoolExecutor(max_workers=4) as pool:
        while position < len(order):
            group = order[position : position + sizes[position]]
            results = list(pool.map(lambda w: ack.stamp(w[0], w[1].finish_stamp()), group))
            for (tag, _), result in zip(group, results, strict=True):
                remaining[tag] -= 1
                if result.acked:
                    assert tag not in acked_at, "a chain acked twice"
                    acked_at[tag] = position
                    # Acked only once every stamp of the tree has been applied.
                    assert remaining[tag] == 0
            position += len(group)
    assert set(acked_at) == set(tags)
    for tag in tags:
        state = ack.get(tag)
        assert state is not None and state.acked


@pytest.mark.parametrize("fanout", [1, 2, 8])
def test_every_proper_subset_of_stamps_leaves_the_chain_pending(fanout: int) -> None:
    root = Node([Node([Node() for _ in range(fanout)]) for _ in range(fanout)])
    stamps = [n.finish_stamp() for n in root.walk()]
    assert xor(root.id, *stamps).acked
    for skip in range(len(stamps)):
        rest = stamps[:skip] + stamps[skip + 1 :]
        assert not xor(root.id, *rest).acked
