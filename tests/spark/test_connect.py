"""The library over Spark Connect: a server started here, the job run by the thin client.

The client is ``pyspark-client`` in its own virtualenv (it conflicts with the full
``pyspark``): ``.venv-connect`` (``make unit`` builds it) or ``XOR_ACK_CONNECT_PYTHON``.
Outside CI a missing client venv skips with the way to make it; under ``CI=true`` it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from xor_ack_dynamodb.table import TableSpec

from .conftest import independent_count, read_counts
from .servers import ROOT, connect_server


def client_python() -> Path:
    explicit = os.environ.get("XOR_ACK_CONNECT_PYTHON")
    path = Path(explicit) if explicit else ROOT / ".venv-connect" / "bin" / "python"
    if not path.exists():
        message = (
            f"no Spark Connect client at {path}: build it with `make .venv-connect/.installed` "
            "(pyspark-client in its own virtualenv) or set XOR_ACK_CONNECT_PYTHON"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    client_python()  # skip (or fail under CI) before starting a server for nothing
    with connect_server(tmp_path_factory.mktemp("connect-logs")) as url:
        yield url


def test_wordcount_over_spark_connect_exact_under_faults(
    connect_url: str, corpus: Path, tmp_path: Path, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    out = tmp_path / "counts"
    env = dict(os.environ)
    env.update(
        SPARK_REMOTE=connect_url,
        PYTHONPATH=str(ROOT),
        AWS_ENDPOINT_URL_DYNAMODB=ddb_local_endpoint,
        AWS_REGION="us-east-1",
    )
    run = subprocess.run(
        [
            str(client_python()),
            "-m",
            "xor_ack_dynamodb.spark.examples.wordcount",
            str(corpus),
            str(out),
            "--table",
            ddb_table.name,
            "--fail-rate",
            "0.3",
            "--seed",
            "8",
            "--partitions",
            "8",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert all(i["status"] == "acked" for i in report["inputs"])
    assert any(i["attempts"] > 1 for i in report["inputs"]), "no replay: the faults proved nothing"
    assert read_counts(out) == dict(independent_count(corpus))


def test_xor_ack_wordcount_remote_over_spark_connect(
    connect_url: str, corpus: Path, tmp_path: Path, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """``xor-ack wordcount --remote`` (from the thin client) counts exactly, with faults."""
    out = tmp_path / "counts"
    report_path = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SPARK_REMOTE", None)
    run = subprocess.run(
        [
            str(client_python()), "-m", "xor_ack_dynamodb.pipeline", "wordcount", str(corpus),
            "--output", str(out), "--report", str(report_path), "--remote", connect_url,
            "--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name,
            "--region", "us-east-1", "--fail-rate", "0.3", "--seed", "8", "--partitions", "8",
        ],
        env=env, capture_output=True, text=True, timeout=280, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert all(i["status"] == "acked" for i in report["inputs"])
    assert any(i["attempts"] > 1 for i in report["inputs"]), "no replay: the faults proved nothing"
    assert read_counts(out) == dict(independent_count(corpus))
