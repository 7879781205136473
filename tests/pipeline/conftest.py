"""One SparkSession per test session (local[2], retries on), and helpers to check counts.

``read_output`` (the counts in OUTPUT, a word twice an error) is ``--verify``'s own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.pipeline.verify import read_output

pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from xor_ack_dynamodb.pipeline.spark import build_session, master_with_retries

    # local[2] with up to 8 attempts per task: local mode retries nothing otherwise, and
    # the fault-injection tests rely on Spark retrying crashed attempts.
    session = build_session(
        master_with_retries("local[2]"), shuffle_partitions=4, log_level="FATAL"
    )
    yield session
    session.stop()


@pytest.fixture
def shared_spark(spark: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Let the command use the test session (and neither stop it nor its JVM)."""
    from xor_ack_dynamodb.pipeline import spark as spark_module

    monkeypatch.setattr(spark_module, "start_session", lambda *a, **k: spark)
    monkeypatch.setattr(spark_module, "stop_session", lambda *a, **k: None)
    return spark


def expected_counts(root: Path, *, skip_undecodable: bool = True) -> Counter[str]:
    """The independent count: every file, line by line, as the issue defines words."""
    counts: Counter[str] = Counter()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name.startswith(("_", ".")):
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            if skip_undecodable:
                continue
            raise
        for line in text.splitlines():
            counts.update(re.findall(r"\w+", line.lower()))
    return counts


def file_counts(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in path.read_bytes().decode("utf-8").splitlines():
        counts.update(re.findall(r"\w+", line.lower()))
    return counts


__all__ = ["expected_counts", "file_counts", "read_output"]
