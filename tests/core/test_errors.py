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
    assert "30 s" in str(E.WaitTimeout("t", 30)) and "left as it was" in str(E.WaitTimeout("t", 3))
    assert "replay" in str(E.AmbiguousWrite("t", 32))
    failed = E.StampManyFailed({"a": b"\x01"}, {"b": E.TagNotFound("b")})
    assert "1 of 2" in str(failed) and failed.errors["b"].code == "TagNotFound"


def test_a_failed_chain_is_one_type_to_catch_and_giving_up_a_wait_another() -> None:
    timed_out = E.ChainTimedOut("t", deadline=5.0, failed_by_this_call=True)
    assert isinstance(timed_out, E.ChainFailed) and timed_out.reason == "timeout"
    assert timed_out.code == "ChainTimedOut" and "this call failed it" in str(timed_out)
    gave_up = E.WaitTimeout("t", 3)
    assert not isinstance(gave_up, E.ChainFailed) and gave_up.seconds == 3
    plain = E.ChainFailed("t", "poison")
    assert not plain.failed_by_this_call and plain.state is None and plain.failed_at is None


def test_chain_timeout_still_catches_both_and_warns_where_it_is_named() -> None:
    with pytest.warns(DeprecationWarning, match="ChainTimedOut .* or WaitTimeout"):
        legacy = E.ChainTimeout
    for raised in (E.ChainTimedOut("t"), E.WaitTimeout("t", 1.0)):
        with pytest.raises(legacy):
            raise raised
    with pytest.warns(DeprecationWarning):
        from xor_ack_dynamodb.errors import ChainTimeout  # noqa: F401
    assert legacy("t", 30).code == "ChainTimeout" and "30 s" in str(legacy("t", 30))
    with pytest.raises(AttributeError):
        E.NoSuchError  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize(
    "error",
    [
        E.ChainFailed("job-1", "payment declined"),
        E.WaitTimeout("job-1", 1.0),
        E.AmbiguousWrite("job-1", 32),
        E.CorruptItem("job-1", "stamp", "is missing"),
        E.StampManyFailed({}, {"job-1": E.TagNotFound("job-1")}),
    ],
    ids=lambda e: type(e).__name__,
)
def test_an_error_survives_pickling(error: E.XorAckError) -> None:
    # Errors whose __init__ takes more than the message could not be unpickled (a bare
    # TypeError: a missing argument), so one raised in a process pool broke the pool.
    import pickle

    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error)
    assert copy.__dict__.keys() == error.__dict__.keys()


def test_every_error_pickles_as_the_base_says() -> None:
    import importlib

    for module in ("fleet.errors", "spark.errors", "pipeline.errors", "dashboard"):
        importlib.import_module(f"xor_ack_dynamodb.{module}")
    found, todo = [], [E.XorAckError]
    while todo:
        found.append(cls := todo.pop())
        todo.extend(cls.__subclasses__())
    assert len(found) > 40
    assert [c for c in found if c.__reduce__ is not E.XorAckError.__reduce__] == []
