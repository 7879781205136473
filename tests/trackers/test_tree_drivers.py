"""TupleTree and AsyncTupleTree are two drivers of one plan: same requests, same results."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Hashable
from typing import Any

import pytest

from xor_ack_dynamodb.acker import Acker, IdGenerator
from xor_ack_dynamodb.memory._tree_plan import FailTree, Init, TreePlan, TupleRef, Xor
from xor_ack_dynamodb.tuple_tree import AckerSink, AsyncTupleTree, TupleTree


class Log:
    """A blocking sink over one Acker that logs every call."""

    def __init__(self) -> None:
        self.inner = AckerSink([Acker()])
        self.calls: list[tuple[Any, ...]] = []

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        self.calls.append(("init", anchor_id, value, task_id, source_id))
        return self.inner.init(anchor_id, value, task_id=task_id, source_id=source_id)

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        self.calls.append(("xor", anchor_id, value, token))
        return self.inner.xor(anchor_id, value, token=token)

    def fail(self, anchor_id: int) -> None:
        self.calls.append(("fail", anchor_id))
        self.inner.fail(anchor_id)


class AsyncLog:
    """The same, awaited."""

    def __init__(self) -> None:
        self.log = Log()

    async def init(
        self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable
    ) -> bool:
        await asyncio.sleep(0)
        return self.log.init(anchor_id, value, task_id=task_id, source_id=source_id)

    async def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        await asyncio.sleep(0)
        return self.log.xor(anchor_id, value, token=token)

    async def fail(self, anchor_id: int) -> None:
        await asyncio.sleep(0)
        self.log.fail(anchor_id)


#: A script of calls: (verb, argument).  Tuples are picked from those seen so far by index.
SCRIPT: list[tuple[str, Any]] = [
    ("start", 2),
    ("ack", 3),
    ("emit", 2),
    ("ack", 0),
    ("ack", 1),
    ("start", 1),
    ("fail", None),
    ("emit", 0),  # an error: emit needs >= 1 child
    ("ack", -1),  # an error: negative children
    ("start", 0),  # an error: a tree needs a root
]


def drive_sync(tree: TupleTree, rnd: random.Random) -> list[Any]:
    refs: list[TupleRef] = []
    results: list[Any] = []
    for verb, arg in SCRIPT:
        try:
            if verb == "start":
                started = tree.start(arg, task_id="spout", source_id=len(results))
                refs.extend(started.roots)
                results.append(started)
            elif verb == "ack":
                emitted = tree.ack(refs[rnd.randrange(len(refs))], children=arg)
                refs.extend(emitted.children)
                results.append(emitted)
            elif verb == "emit":
                children = tree.emit(refs[rnd.randrange(len(refs))], arg, offset=len(results))
                refs.extend(children)
                results.append(children)
            else:
                tree.fail(refs[rnd.randrange(len(refs))])
                results.append("failed")
        except ValueError as exc:
            results.append(("ValueError", str(exc)))
    return results


async def drive_async(tree: AsyncTupleTree, rnd: random.Random) -> list[Any]:
    refs: list[TupleRef] = []
    results: list[Any] = []
    for verb, arg in SCRIPT:
        try:
            if verb == "start":
                started = await tree.start(arg, task_id="spout", source_id=len(results))
                refs.extend(started.roots)
                results.append(started)
            elif verb == "ack":
                emitted = await tree.ack(refs[rnd.randrange(len(refs))], children=arg)
                refs.extend(emitted.children)
                results.append(emitted)
            elif verb == "emit":
                children = await tree.emit(refs[rnd.randrange(len(refs))], arg, offset=len(results))
                refs.extend(children)
                results.append(children)
            else:
                await tree.fail(refs[rnd.randrange(len(refs))])
                results.append("failed")
        except ValueError as exc:
            results.append(("ValueError", str(exc)))
    return results


@pytest.mark.parametrize("deterministic", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_sync_and_async_drivers_send_and_return_the_same(seed: int, deterministic: bool) -> None:
    sync_sink, async_sink = Log(), AsyncLog()
    sync_tree = TupleTree(sync_sink, IdGenerator(seed), deterministic=deterministic)
    async_tree = AsyncTupleTree(async_sink, IdGenerator(seed), deterministic=deterministic)
    sync_results = drive_sync(sync_tree, random.Random(seed))
    async_results = asyncio.run(drive_async(async_tree, random.Random(seed)))
    assert async_results == sync_results
    assert async_sink.log.calls == sync_sink.calls
    errors = [r for r in sync_results if isinstance(r, tuple) and r[:1] == ("ValueError",)]
    assert len(errors) == 3  # the script's three bad calls, refused alike
    assert any(call[0] == "fail" for call in sync_sink.calls)


def test_a_plan_step_is_one_request_and_its_result() -> None:
    plan = TreePlan(IdGenerator(7), deterministic=True)
    start = plan.start(3, "spout", "row")
    assert isinstance(start.request, Init)
    started = start.finish(False)
    folded = 0
    for root in started.roots:
        folded ^= root.tuple_id
    assert start.request == Init(started.anchor_id, folded, "spout", "row")
    assert start.finish(True).completed is True

    root = started.roots[0]
    ack = plan.ack(root, 2)
    emitted = ack.finish(True)
    assert emitted.completed and len(emitted.children) == 2
    value = root.tuple_id ^ emitted.children[0].tuple_id ^ emitted.children[1].tuple_id
    assert ack.request == Xor(
        root.anchor_id, value, b"a" + root.tuple_id.to_bytes(8, "big", signed=True)
    )

    emit = plan.emit(root, 1, 4)
    (child,) = emit.finish(False)
    assert isinstance(emit.request, Xor) and emit.request.value == child.tuple_id

    fail = plan.fail(root)
    assert fail.request == FailTree(root.anchor_id) and fail.finish(False) is None
