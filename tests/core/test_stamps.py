"""Stamps and the XOR algebra: the seed's table, typed errors, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xor_ack_dynamodb import Stamp, XorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.errors import (
    BufferLengthsUnequal,
    InvalidStamp,
    LessThanTwoBuffers,
    XorAckError,
    ZeroBufferNoOp,
)
from xor_ack_dynamodb.stamps import DEFAULT_NBYTES, as_stamp

H = bytes.fromhex


@pytest.mark.parametrize(
    ("inputs", "expected", "acked"),
    [
        (["00", "00"], "00", True),
        (["10", "01"], "11", False),
        (["10", "01", "02"], "13", False),
        (["10", "01", "11"], "00", True),
        (["29", "25", "a9", "e9"], "4c", False),  # the seed README's xorOfAll
    ],
)
def test_seed_xor_table(inputs: list[str], expected: str, acked: bool) -> None:
    result = xor(*(H(i) for i in inputs))
    assert isinstance(result, Stamp)
    assert result == H(expected)
    assert result.acked is acked


def test_static_xor_is_the_same_function() -> None:
    assert XorAckDynamoDB.xor is xor or XorAckDynamoDB.xor(H("10"), H("01")) == H("11")
    assert XorAckDynamoDB.xor(H("10"), H("01"), H("02")) == H("13")


@pytest.mark.parametrize(("a", "b"), [("0000", "00"), ("00", "0000"), ("01", "0101")])
def test_unequal_lengths_either_way(a: str, b: str) -> None:
    with pytest.raises(BufferLengthsUnequal) as info:
        xor(H(a), H(b))
    assert info.value.code == "BufferLengthsUnequal"
    assert str(info.value) == "Buffer lengths are not equal"


def test_unequal_length_anywhere_in_the_list() -> None:
    with pytest.raises(BufferLengthsUnequal):
        xor(H("01"), H("02"), H("0303"))


@pytest.mark.parametrize("inputs", [[], [b"\x01"]])
def test_less_than_two_buffers(inputs: list[bytes]) -> None:
    with pytest.raises(LessThanTwoBuffers) as info:
        xor(*inputs)
    assert info.value.code == "LessThanTwoBuffers"
    assert str(info.value) == "At least two buffers expected"
    assert isinstance(info.value, XorAckError)


def test_inputs_are_never_mutated() -> None:
    a, b = bytearray(b"\x0f\xf0"), bytearray(b"\xff\x00")
    xor(a, b)
    assert a == bytearray(b"\x0f\xf0") and b == bytearray(b"\xff\x00")


def test_wrong_types_are_typed_errors() -> None:
    with pytest.raises(InvalidStamp):
        xor("10", "01")  # type: ignore[arg-type]
    with pytest.raises(InvalidStamp):
        as_stamp(42)
    with pytest.raises(InvalidStamp):
        as_stamp(b"")


def test_stamp_is_bytes_with_acked() -> None:
    assert Stamp(b"\x22") == b"\x22"
    assert not Stamp(b"\x22").acked
    assert Stamp(b"\x00\x00").acked
    assert Stamp.zeros(4) == bytes(4)


def test_zero_stamp_is_rejected_as_input() -> None:
    with pytest.raises(ZeroBufferNoOp) as info:
        as_stamp(bytes(8))
    assert str(info.value) == "Buffer is all zeros"


def test_new_stamp_default_size_and_randomness() -> None:
    stamps = {new_stamp() for _ in range(1000)}
    assert len(stamps) == 1000
    assert all(len(s) == DEFAULT_NBYTES >= 8 and not s.acked for s in stamps)
    assert len(new_stamp(nbytes=64)) == 64


# past 400 KB: 10**20 raised a bare OverflowError from os.urandom
@pytest.mark.parametrize("nbytes", [0, 7, -1, 8.0, True, 400 * 1024 + 1, 10**20])
def test_new_stamp_rejects_short_long_or_odd_sizes(nbytes: object) -> None:
    with pytest.raises(InvalidStamp):
        new_stamp(nbytes=nbytes)  # type: ignore[arg-type]


def test_new_stamp_never_returns_zeros(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = iter([bytes(8), bytes(8), b"\x00" * 7 + b"\x01"])
    monkeypatch.setattr("secrets.token_bytes", lambda n: next(draws))
    assert new_stamp(8) == b"\x00" * 7 + b"\x01"


same_length = st.integers(min_value=1, max_value=32).flatmap(
    lambda n: st.lists(st.binary(min_size=n, max_size=n), min_size=2, max_size=12)
)


@given(same_length)
def test_xor_is_order_independent(stamps: list[bytes]) -> None:
    assert xor(*stamps) == xor(*reversed(stamps))


@given(same_length)
def test_every_stamp_twice_cancels(stamps: list[bytes]) -> None:
    assert xor(*stamps, *stamps).acked


@given(same_length, st.data())
def test_xor_is_associative(stamps: list[bytes], data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=1, max_value=len(stamps) - 1))
    left, right = stamps[:cut], stamps[cut:]
    fold_left = left[0] if len(left) == 1 else xor(*left)
    fold_right = right[0] if len(right) == 1 else xor(*right)
    assert xor(fold_left, fold_right) == xor(*stamps)


@given(st.lists(st.binary(min_size=16, max_size=16), min_size=1, max_size=10))
def test_parent_and_children_fold(children: list[bytes]) -> None:
    """A parent's finish folded with its children's starts, then each child, is zero."""
    parent = b"\x5a" * 16
    state = xor(parent, parent, *children)
    for child in children:
        state = xor(state, child)
    assert state.acked
