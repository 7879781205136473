"""Spark helpers that need no Spark: master rewriting."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline.spark import master_with_retries


@pytest.mark.parametrize(
    ("master", "expected"),
    [
        ("local", "local[1,8]"),
        ("local[*]", "local[*,8]"),
        ("local[2]", "local[2,8]"),
        ("local[2,3]", "local[2,3]"),
        ("spark://host:7077", "spark://host:7077"),
        ("yarn", "yarn"),
    ],
)
def test_local_masters_get_task_retries(master: str, expected: str) -> None:
    assert master_with_retries(master) == expected
