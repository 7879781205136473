"""Fixtures of the tracker tests: every Ack behaviour runs against both cores.

The C core is skipped when the optional extension is not built, unless
``XOR_ACK_REQUIRE_EXTENSION`` is set (CI: a missing build is then a failure).
"""

from __future__ import annotations

import os

import pytest

from xor_ack_dynamodb.memory import CAck, PyAck

_C_MISSING = CAck is None and not os.environ.get("XOR_ACK_REQUIRE_EXTENSION")


@pytest.fixture(
    params=[
        pytest.param("python"),
        pytest.param(
            "c",
            marks=pytest.mark.skipif(
                _C_MISSING, reason="C extension _ackcore not built (pip install -e .)"
            ),
        ),
    ]
)
def Ack(request: pytest.FixtureRequest) -> type[PyAck]:
    """The Ack class under test: the pure-Python core, then the C core."""
    if request.param == "python":
        return PyAck
    if CAck is None:
        pytest.fail("XOR_ACK_REQUIRE_EXTENSION is set but the C extension _ackcore is not built")
    return CAck  # type: ignore[return-value]
