"""The library on a standalone cluster started here, the job submitted with spark-submit."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from xor_ack_dynamodb.table import TableSpec

from .conftest import independent_count, read_counts
from .servers import ROOT, server_env, standalone_cluster, submit
from .test_poison import SCRIPT as POISON
from .test_poison import check_poison_run

SCRIPT = ROOT / "xor_ack_dynamodb" / "spark" / "examples" / "run_wordcount.py"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # One worker of two cores: an executor process per job, two tasks at a time (each JVM
    # more costs the suite seconds of CPU, and the executors' Python workers are processes
    # of their own either way).
    with standalone_cluster(tmp_path_factory.mktemp("standalone-logs"), cores=2) as url:
        yield url


def test_wordcount_on_a_standalone_cluster_exact_under_faults(
    cluster: str,
    corpus: Path,
    tmp_path: Path,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
) -> None:
    out = tmp_path / "counts"
    env = server_env(tmp_path)
    env.update(AWS_ENDPOINT_URL_DYNAMODB=ddb_local_endpoint, AWS_REGION="us-east-1")
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    args = [str(corpus), str(out), "--table", ddb_table.name, "--fail-rate", "0.3"]
    run = submit(cluster, SCRIPT, [*args, "--seed", "2", "--partitions", "8"], env, 280)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(run.stdout[run.stdout.index("{") :])
    assert all(i["status"] == "acked" for i in report["inputs"])
    assert any(i["attempts"] > 1 for i in report["inputs"]), "no replay: the faults proved nothing"
    assert read_counts(out) == dict(independent_count(corpus))
    assert os.listdir(out)  # the committed output, nothing staged left beside it
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".counts.xor-ack-")]


def test_one_raising_one_crashing_input_among_fifty_on_a_standalone_cluster(
    cluster: str, tmp_path: Path, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """``test_poison``'s job through spark-submit: the crashing input's task is retried by
    the cluster (8 attempts) before its job fails; the same ending."""
    out = tmp_path / "out"
    env = server_env(tmp_path)
    env.update(AWS_REGION="us-east-1")
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    args = [str(out), "--table", ddb_table.name, "--endpoint", ddb_local_endpoint]
    run = submit(cluster, POISON, args, env, 280)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    check_poison_run(json.loads(run.stdout[run.stdout.index("{") :]), out)
