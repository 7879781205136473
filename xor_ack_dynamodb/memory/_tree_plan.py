"""The sans-I/O core of the tuple-tree helpers: ids, folded values, and one request per call.

:class:`~xor_ack_dynamodb.memory.tuple_tree.TupleTree` (blocking) and
:class:`~xor_ack_dynamodb.memory.tuple_tree.AsyncTupleTree` are thin drivers over
:class:`TreePlan`: each of their calls asks the plan for a :class:`Step` -- the
one request to send to the sink (:class:`Init`, :class:`Xor` or
:class:`FailTree`) and how the sink's answer (did the tree complete?) becomes
the call's result -- sends it, and returns ``step.finish(answer)``.  Every
decision (ids, folding, idempotency tokens, validation) is made here, once;
nothing here blocks, awaits or reads a clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

from ..errors import InvalidArgument
from ..errors._refusals import shown
from .acker import IdGenerator, check_id

__all__ = ["Emitted", "FailTree", "Init", "Started", "Step", "TreePlan", "TupleRef", "Xor"]

ID_BYTES = 8
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class TupleRef:
    """A tuple of a tree: ``"anchor_id:tuple_id"`` on the wire (FsShelter's encoding)."""

    anchor_id: int
    tuple_id: int

    def __str__(self) -> str:
        return f"{self.anchor_id}:{self.tuple_id}"

    @classmethod
    def parse(cls, text: str) -> TupleRef:
        """Read ``"anchor_id:tuple_id"``; ``InvalidArgument`` (a ``ValueError``) for anything
        else, a tuple id of 0 included (ids are never 0)."""
        parts = text.split(":") if isinstance(text, str) else []
        if len(parts) != 2:
            raise InvalidArgument(f'a tuple reference is "anchor_id:tuple_id", not {text!r}')
        try:
            anchor_id, tuple_id = int(parts[0]), int(parts[1])
        except ValueError as exc:
            raise InvalidArgument(
                f'a tuple reference is "anchor_id:tuple_id", not {text!r}'
            ) from exc
        return check_ref(cls(anchor_id, tuple_id))


def check_ref(ref: object) -> TupleRef:
    """``ref`` as a tuple of a tree: int64 ids, the tuple id never 0; else ``InvalidArgument``.

    A zero tuple id would be invisible to the XOR: a bolt could never ack it.
    """
    if not isinstance(ref, TupleRef):
        raise InvalidArgument(f"a tuple is a TupleRef (TupleRef.parse(text)), not {ref!r}")
    check_id(ref.anchor_id, "anchor_id")
    if check_id(ref.tuple_id, "tuple_id") == 0:
        raise InvalidArgument(
            f"tuple ids are never 0, so {ref} is no tuple of a tree: pass the TupleRef that "
            "start(), ack() or emit() returned"
        )
    return ref


@dataclass(frozen=True, slots=True)
class Started:
    """A tree the spout started: emit ``roots``, one per downstream tuple."""

    anchor_id: int
    roots: tuple[TupleRef, ...]
    completed: bool = False


@dataclass(frozen=True, slots=True)
class Emitted:
    """What a bolt's ack returns: the children to emit, and whether the tree completed."""

    children: tuple[TupleRef, ...]
    completed: bool


# -- what a call sends, and what it returns ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Init:
    """Start tree ``anchor_id`` with ``value`` (its root ids folded): ``sink.init``."""

    anchor_id: int
    value: int
    task_id: Hashable
    source_id: Hashable


@dataclass(frozen=True, slots=True)
class Xor:
    """XOR ``value`` into tree ``anchor_id`` (``token``: the write's idempotency token)."""

    anchor_id: int
    value: int
    token: bytes | None


@dataclass(frozen=True, slots=True)
class FailTree:
    """Fail tree ``anchor_id``: ``sink.fail``."""

    anchor_id: int


Request: TypeAlias = Init | Xor | FailTree


@dataclass(frozen=True, slots=True)
class Step(Generic[R]):
    """One call of a tuple tree: the request to send, and its result from the sink's answer."""

    request: Request
    finish: Callable[[bool], R]


# -- planning ------------------------------------------------------------------------------


def _fold(values: Sequence[int]) -> int:
    acc = 0
    for value in values:
        acc ^= value
    return acc


def _derived_id(parent: TupleRef, call: bytes, index: int, salt: int) -> int:
    """A child id derived from its parent and the call: the same input gives the same children."""
    digest = hashlib.blake2b(
        b"%d:%d:%s:%d:%d" % (parent.anchor_id, parent.tuple_id, call, index, salt),
        digest_size=ID_BYTES,
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def _count(value: int, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgument(f"{what} must be an int >= {minimum}, not {shown(value)}")
    return value


_ACK_CALL = b"a"
_MAX_OFFSET = 2**32 - 1


def _emit_call(offset: int) -> bytes:
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= _MAX_OFFSET:
        raise InvalidArgument(f"offset must be an int in [0, {_MAX_OFFSET}], not {shown(offset)}")
    return b"e" + offset.to_bytes(4, "big")


class TreePlan:
    """Which ids a tree's tuples get, which value each message carries, what each call sends."""

    def __init__(self, next_id: Callable[[], int] | None, deterministic: bool) -> None:
        self.next_id = next_id if next_id is not None else IdGenerator()
        self.deterministic = deterministic

    def _fresh(self) -> int:
        value = check_id(self.next_id(), "generated id")
        if value == 0:
            raise InvalidArgument("the id generator returned 0: ids must never be 0")
        return value

    def roots(self, roots: int) -> tuple[int, tuple[TupleRef, ...], int]:
        """A new anchor id, its ``roots`` root tuples and their folded value (never 0)."""
        _count(roots, "roots", 1)
        anchor_id = self._fresh()
        while True:
            ids = [self._fresh() for _ in range(roots)]
            value = _fold(ids)
            if value:  # XOR of several random ids is 0 with chance 2**-64: draw again
                return anchor_id, tuple(TupleRef(anchor_id, i) for i in ids), value

    def children(
        self, parent: TupleRef, n: int, call: bytes, own: int
    ) -> tuple[tuple[TupleRef, ...], int]:
        """``n`` children of ``parent`` and the value ``own ^ children`` (never 0).

        ``call`` names the bolt's call (its ack, or its k-th emit), so that derived
        ids of different calls on one input never coincide.
        """
        _count(n, "children", 0)
        salt = 0
        while True:
            if self.deterministic:
                ids = [_derived_id(parent, call, i, salt) for i in range(n)]
            else:
                ids = [self._fresh() for _ in range(n)]
            value = own ^ _fold(ids)
            if value and all(ids):
                return tuple(TupleRef(parent.anchor_id, i) for i in ids), value
            salt += 1

    def token(self, call: bytes, parent: TupleRef) -> bytes | None:
        """Idempotency token of a bolt's write: only derived children make a re-send equal."""
        if not self.deterministic:
            return None
        return call + parent.tuple_id.to_bytes(ID_BYTES, "big", signed=True)

    # -- the four calls, as steps ----------------------------------------------------------

    def start(self, roots: int, task_id: Hashable, source_id: Hashable) -> Step[Started]:
        """Spout: a new tree whose ``roots`` tuples are about to be emitted (one message)."""
        anchor_id, refs, value = self.roots(roots)
        return Step(
            Init(anchor_id, value, task_id, source_id),
            lambda completed: Started(anchor_id, refs, completed),
        )

    def ack(self, input: TupleRef, children: int) -> Step[Emitted]:
        """Bolt: ack ``input`` and anchor ``children`` new tuples, in one folded stamp."""
        check_ref(input)
        refs, value = self.children(input, children, _ACK_CALL, input.tuple_id)
        token = self.token(_ACK_CALL, input)
        return Step(Xor(input.anchor_id, value, token), lambda completed: Emitted(refs, completed))

    def emit(self, input: TupleRef, children: int, offset: int) -> Step[tuple[TupleRef, ...]]:
        """Bolt: anchor ``children`` more tuples to ``input``'s tree, before ``input`` is acked."""
        check_ref(input)
        _count(children, "children", 1)
        call = _emit_call(offset)
        refs, value = self.children(input, children, call, 0)
        return Step(Xor(input.anchor_id, value, self.token(call, input)), lambda _: refs)

    def fail(self, input: TupleRef) -> Step[None]:
        """Bolt: processing ``input`` failed; the whole tree fails."""
        check_ref(input)
        return Step(FailTree(input.anchor_id), lambda _: None)
