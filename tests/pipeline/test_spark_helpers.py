"""Spark helpers that need no Spark: master rewriting, path escaping."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline.spark import escape_input_path, master_with_retries


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


def test_escaping_keeps_one_path_one_path() -> None:
    assert escape_input_path("file:/d/plain.txt") == "file:/d/plain.txt"
    assert escape_input_path("file:/d/a,b {c} [d]*?.txt") == (
        "file:/d/a{\\,}b \\{c\\} \\[d\\]\\*\\?.txt"
    )
