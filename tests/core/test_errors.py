"""Every error: one base, .code equal to the class name, the seed's messages."""

from __future__ import annotations

import pytest

from xor_ack_dynamodb import errors as E


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (E.TagExists("foo"), '"foo" already exists'),
        (E.TagNotFound("foo"), '"foo" does not exist'),
        (E.ZeroBufferNoOp(), "Buffer is all zeros"),
        (E.BufferLengthsUnequal(), "Buffer lengths are not equal"),
        (E.LessThanTwoBuffers(), "At least two buffers expected"),
    ],
)
def test_seed_messages(error: E.XorAckError, message: str) -> None:
    assert str(error) == message
    assert error.code == type(error).__name__


def test_tag_errors_carry_the_tag() -> None:
    for cls in (E.TagExists, E.TagNotFound):
        err = cls("database/file13")
        assert err.tag == "database/file13"


def test_every_error_has_one_base_and_its_own_code() -> None:
    classes = [
        obj
        for obj in vars(E).values()
        if isinstance(obj, type) and issubclass(obj, Exception) and not obj.__name__.startswith("_")
    ]
    assert len(classes) >= 10
    for cls in classes:
        assert issubclass(cls, E.XorAckError)


def test_actionable_messages() -> None:
    assert "retry" in str(E.StaleLocalData("t", attempts=3))
    assert "replay" in str(E.ChainFailed("t", "timeout"))
    assert "30 s" in str(E.ChainTimeout("t", 30))
    assert "replay" in str(E.AmbiguousWrite("t", 32))
    failed = E.StampManyFailed({"a": b"\x01"}, {"b": E.TagNotFound("b")})
    assert "1 of 2" in str(failed) and failed.errors["b"].code == "TagNotFound"
