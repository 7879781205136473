"""ChainState's methods (docs/api.md): an argument they cannot take is InvalidArgument."""

from __future__ import annotations

import math
from typing import Any

import pytest

from xor_ack_dynamodb import ChainState, new_stamp
from xor_ack_dynamodb.errors import InvalidArgument


@pytest.mark.parametrize("now", ["x", math.nan, math.inf, True, b"1"], ids=repr)
def test_overdue_of_a_now_that_is_no_time_is_invalid_argument(now: Any) -> None:
    state = ChainState("t", new_stamp(), b"c" * 16, 1, (), 0.0, 0.0, deadline=10.0)
    with pytest.raises(InvalidArgument, match=r"overdue\(now\) .*epoch seconds") as caught:
        state.overdue(now)
    assert repr(now) in str(caught.value)
    assert state.overdue(11) and not state.overdue(9.5) and state.overdue()


@pytest.mark.parametrize("method", ["overdue", "expired"])
def test_a_now_too_big_for_a_float_is_invalid_argument(method: str) -> None:
    # An int too big for a float passed the type check and raised a bare OverflowError.
    state = ChainState("t", new_stamp(), b"c" * 8, 1, (), 0.0, 0.0, expires_at=20.0, deadline=10.0)
    with pytest.raises(InvalidArgument, match=rf"{method}\(now\) .*not an int of 401 digits"):
        getattr(state, method)(10**400)
