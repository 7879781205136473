"""Fixtures of the infrastructure tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from xor_ack_dynamodb.local import stop_detached


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state folder of its own for ``xor-ack local`` (``XOR_ACK_RUN_DIR``)."""
    folder = tmp_path / "run"
    monkeypatch.setenv("XOR_ACK_RUN_DIR", str(folder))
    yield folder
    stop_detached(folder)  # never leave a server behind, whatever the test did
