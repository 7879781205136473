"""A token refused is shown as the caller passed it: the str, not its UTF-8 bytes."""

from __future__ import annotations

from typing import Any

import pytest

from xor_ack_dynamodb import ChainState, new_stamp
from xor_ack_dynamodb.errors import InvalidToken
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client


@pytest.mark.parametrize(
    ("token", "shown"),
    [
        ("é" * 9, "'ééééééééé' (18 bytes of UTF-8)"),
        ("", "'' (0 bytes of UTF-8)"),
        (b"x" * 17, "b'xxxxxxxxxxxxxxxxx' (17 bytes)"),
        (bytearray(), "bytearray(b'') (0 bytes)"),
        (memoryview(b"tok"), "not a memoryview"),
        (42, "not an int"),
    ],
    ids=["str-18-bytes", "str-empty", "bytes-17", "bytearray-empty", "memoryview", "int"],
)
async def test_a_token_refused_is_named_in_the_callers_terms(
    kind: str, local: tuple[str, TableSpec], token: Any, shown: str
) -> None:
    endpoint, spec = local
    async with open_client(kind, endpoint, spec.name) as ack:
        s = new_stamp()
        await ack.create("t", s)
        calls = [
            lambda: ack.stamp("t", s, token=token),
            lambda: ack.stamp_many({"t": s}, tokens={"t": token}),
        ]
        for call in calls:
            with pytest.raises(InvalidToken) as caught:
                await call()
            message = str(caught.value)
            assert shown in message, message
            assert "<memory at" not in message and "\\xc3" not in message
        assert not (await ack.get("t")).acked


def test_holds_names_a_token_as_the_caller_passed_it() -> None:
    state = ChainState("t", new_stamp(), b"c" * 16, 1, (), 0.0, 0.0)
    with pytest.raises(InvalidToken, match="'ééééééééé' \\(18 bytes of UTF-8\\)"):
        state.holds("é" * 9)
