"""Fixtures of the tracker tests: every Ack behaviour runs against both cores."""

from __future__ import annotations

import pytest

from xor_ack_dynamodb.memory import CAck, PyAck


@pytest.fixture(
    params=[
        pytest.param("python"),
        pytest.param(
            "c",
            marks=pytest.mark.skipif(
                CAck is None, reason="C extension _ackcore not built (pip install -e .)"
            ),
        ),
    ]
)
def Ack(request: pytest.FixtureRequest) -> type[PyAck]:
    """The Ack class under test: the pure-Python core, then the C core."""
    return PyAck if request.param == "python" else CAck  # type: ignore[return-value]
