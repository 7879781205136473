"""Ctrl-C in the middle of a run: a clean stop, one line, exit 130, exact re-run.

The command runs in a subprocess (its own Spark JVM and its own DynamoDB Local); SIGINT,
the signal SparkContext takes a handler for, is sent once the first round has started.
Every process of the run's tree, seen just before the signal, must be gone afterwards,
and nothing may be left beside OUTPUT.  The re-run is the same command, in this process
on the test session.  SIGTERM goes through the same handler
(``test_interruption.py`` raises it in-process).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline import cli as pipeline_cli
from xor_ack_dynamodb.pipeline.corpus import generate
from xor_ack_dynamodb.table import TableSpec

from .conftest import expected_counts, read_output

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]


def descendants(pid: int) -> dict[int, str]:
    """Every process under ``pid`` (from /proc), with its command line."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: dict[int, str] = {}
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        todo.extend(children.get(child, []))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_pipeline_cli(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``python -m xor_ack_dynamodb.pipeline ARGS`` as a user runs it (its own Spark),
    importing the same package as this test, its stderr written to ``log``."""
    source = str(Path(pipeline_cli.__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": path}
    with log.open("w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "xor_ack_dynamodb.pipeline", *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )


def interrupt_mid_run(args: list[str], sig: signal.Signals, log: Path) -> tuple[int, str]:
    proc = start_pipeline_cli(args, log)
    try:
        deadline = time.monotonic() + 240
        while "round 1:" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        tree = descendants(proc.pid)
        assert any("java" in cmd for cmd in tree.values()), tree  # Spark's JVM at least
        proc.send_signal(sig)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:  # pragma: no cover - only if the test already failed
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 15
    while any(alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = {p: cmd for p, cmd in tree.items() if alive(p)}
    for p in survivors:  # pragma: no cover - leave no stray process even on failure
        os.kill(p, signal.SIGKILL)
    assert not survivors, f"left running: {survivors}"
    return code, log.read_text()


def test_ctrl_c_stops_cleanly_with_its_own_dynamodb_local_and_a_rerun_is_exact(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    generate(corpus, files=60, lines=30, seed=5)
    out = tmp_path / "out"
    given = ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    common = ["wordcount", str(corpus), "--output", str(out / "counts")]
    common += ["--report", str(out / "report.json")]
    # A DynamoDB Local the command starts itself: it must stop it too.
    own = ["--local-backend", "dynamodb-local"]
    code, err = interrupt_mid_run([*common, *own], signal.SIGINT, tmp_path / "SIGINT.log")
    assert code == 130, err
    assert "Traceback" not in err and "WARN" not in err and "log4j" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted (SIGINT): "), err
    assert "of 60 files acked" in last and "nothing was written to" in last, last
    assert last.endswith("re-run the same command")
    # Nothing beside OUTPUT: no staging folder, no report, no OUTPUT.
    assert not out.exists() or list(out.iterdir()) == [], list(out.iterdir())

    result = CliRunner().invoke(pipeline_cli.main, [*common, *given])
    assert result.exit_code == 0, result.output
    assert read_output(out / "counts") == dict(expected_counts(corpus))
    assert sorted(p.name for p in out.iterdir()) == ["counts", "report.json"]
