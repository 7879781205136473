"""Fixtures of the fault tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["async", "sync"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)
