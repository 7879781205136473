"""Fifty inputs, one whose function always raises, one whose function kills its Python worker.

``local[2]`` has no task retries: a task that fails fails its job.  The job is a
user's script (``jobs/poison.py``) run in its own process, with its own session.
The raising input fails alone in every round; the crash takes round 1's job with
it, the next round runs the inputs whose function never returned in a child
process each, and the healthy inputs are acked there.  The same job on a
standalone cluster: ``test_standalone.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from xor_ack_dynamodb.table import TableSpec

from .jobs.poison import CRASHES, KEYS, RAISES, rows_of
from .servers import ROOT, server_env

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]
SCRIPT = ROOT / "tests" / "spark" / "jobs" / "poison.py"


def check_poison_run(report: dict[str, Any], out: Path) -> None:
    """48 acked and exact, the 2 bad ones failed with their reasons, at most 3 rounds."""
    status = {i["key"]: i for i in report["inputs"]}
    good = [k for k in KEYS if k not in (RAISES, CRASHES)]
    assert [k for k in KEYS if status[k]["status"] == "acked"] == good
    assert status[RAISES]["status"] == "failed"
    assert (
        status[RAISES]["history"][-1] == f"raised: ValueError: bad input {RAISES} (input {RAISES})"
    )
    assert status[CRASHES]["status"] == "failed"
    assert status[CRASHES]["history"][-1] == (
        f"crashed: the function ended its Python process (killed by SIGKILL) (input {CRASHES})"
    )
    assert len(report["rounds"]) <= 3, report["rounds"]
    assert report["output_state"] == "partial"  # a new folder: written, marked incomplete
    rows = pq.read_table(out).to_pylist()
    assert sorted((r["key"], r["j"]) for r in rows) == sorted(r for k in good for r in rows_of(k))
    assert not (out / "_SUCCESS").exists()
    assert json.loads((out / "_XOR_ACK_MANIFEST.json").read_text())["complete"] is False


def test_one_raising_one_crashing_input_among_fifty_on_local_without_task_retries(
    tmp_path: Path, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    out = tmp_path / "out"
    env = server_env(tmp_path)
    env.update(AWS_REGION="us-east-1")
    argv = [sys.executable, str(SCRIPT), str(out), "--master", "local[2]"]
    argv += ["--table", ddb_table.name, "--endpoint", ddb_local_endpoint]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=280, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(run.stdout[run.stdout.index("{") :])
    check_poison_run(report, out)
    assert report["rounds"][0]["job_error"].startswith("spark job failed: a Python worker died")
