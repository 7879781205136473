"""A small corpus, its independent count, and one local SparkSession for the library's tests."""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline.verify import read_output
from xor_ack_dynamodb.table import TableSpec

WORDS = [f"w{i:03d}" for i in range(300)] + ["Été", "naïve", "x_y", "Zürich"]


def make_corpus(root: Path, files: int = 12, lines: int = 40, seed: int = 7) -> Path:
    """``files`` text files in two folders (plus one empty file), deterministic."""
    rng = random.Random(seed)
    for i in range(files):
        path = root / f"part-{i % 2}" / f"doc-{i:03d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) + rng.choice(["", "."])
            for _ in range(lines)
        )
        path.write_text(text, encoding="utf-8")
    (root / "part-0" / "empty.txt").write_text("", encoding="utf-8")
    return root


def independent_count(root: Path) -> Counter[str]:
    """Every file, line by line, in plain Python: what the output must hold."""
    counts: Counter[str] = Counter()
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.startswith(("_", ".")):
            for line in path.read_text(encoding="utf-8").splitlines():
                counts.update(re.findall(r"\w+", line.lower()))
    return counts


def read_counts(output: Path) -> dict[str, int]:
    """The counts in ``output`` (``--verify``'s reader: a word found twice is an error)."""
    return dict(read_output(str(output)))


@pytest.fixture
def chains_env(
    ddb_local_endpoint: str, ddb_table: TableSpec, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The chains' endpoint from the environment, as a user's job finds it."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb_local_endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    return ddb_table.name


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def local_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """local[2] with 8 attempts per task (local mode retries nothing otherwise); its
    warehouse (the catalog's default database, made on first use) in a temporary folder."""
    from xor_ack_dynamodb.pipeline.spark import build_session, master_with_retries

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = build_session(
        master_with_retries("local[2]"),
        app_name="xor-ack-spark-tests",
        shuffle_partitions=200,
        log_level="FATAL",
        extra={"spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("warehouse"))},
    )
    yield session
    session.stop()
