"""Spark servers a test starts and stops: a Spark Connect server, a standalone cluster.

Every process binds to 127.0.0.1, runs in its own process group (stopped with
it), logs into the test's temporary folder, and runs Python with the shared
virtualenv's interpreter and this checkout on ``PYTHONPATH``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(logs: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL", "SPARK_REMOTE"):
        env.pop(name, None)  # the servers must get the chains' place from the job, not here
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(logs),
        SPARK_PID_DIR=str(logs),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYTHONPATH=str(ROOT),
        XOR_ACK_REQUIRE_EXTENSION="1",
    )
    return env


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited ({proc.returncode}); its log: {log}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.5)
    raise RuntimeError(f"server not listening on 127.0.0.1:{port} after {timeout:g} s: {log}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the process group the test started (and only it)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@contextlib.contextmanager
def connect_server(logs: Path, workdir: Path | None = None) -> Iterator[str]:
    """A Spark Connect server on ``local[2]`` (8 attempts per task): its ``sc://`` URL.

    ``workdir``: its working directory, which holds its warehouse (``warehouse/``) and
    its logs too when given (the tests close it to other users: a client running as
    one must not need it).
    """
    port = free_port()
    if workdir is not None:
        logs = workdir / "logs"
        logs.mkdir(exist_ok=True)
    log = logs / "connect-server.log"
    cmd = [
        "bash",
        str(SPARK_HOME / "sbin" / "start-connect-server.sh"),
        "--wait",
        "--master",
        "local[2,8]",
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.driver.host=127.0.0.1",
        "--conf",
        "spark.driver.bindAddress=127.0.0.1",
        "--conf",
        "spark.sql.shuffle.partitions=8",
    ]
    if workdir is not None:
        cmd += ["--conf", f"spark.sql.warehouse.dir={workdir / 'warehouse'}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            env=server_env(logs),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=workdir,
        )
    try:
        wait_for_port(port, proc, log, timeout=240)
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop(proc)


@contextlib.contextmanager
def standalone_cluster(logs: Path, workers: int = 1, cores: int = 1) -> Iterator[str]:
    """A standalone master and ``workers`` workers (``cores`` each) on 127.0.0.1: its URL."""
    port = free_port()
    env = server_env(logs)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        master_log = logs / "master.log"
        with master_log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--webui-port",
                        "0",
                    ],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        wait_for_port(port, procs[0], master_log, timeout=120)
        url = f"spark://127.0.0.1:{port}"
        for n in range(workers):
            log = logs / f"worker-{n}.log"
            with log.open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        [
                            spark_class,
                            "org.apache.spark.deploy.worker.Worker",
                            "--host",
                            "127.0.0.1",
                            "--webui-port",
                            "0",
                            "--cores",
                            str(cores),
                            "--memory",
                            "1g",
                            "--work-dir",
                            str(logs / f"work-{n}"),
                            url,
                        ],
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        _wait_for_workers(logs, workers, procs)
        yield url
    finally:
        for proc in reversed(procs):
            stop(proc)


def _wait_for_workers(logs: Path, workers: int, procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + 120
    log = logs / "master.log"
    while time.monotonic() < deadline:
        if log.read_text(errors="replace").count("Registering worker") >= workers:
            return
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"a standalone process exited; logs in {logs}")
        time.sleep(0.5)
    raise RuntimeError(f"{workers} workers did not register within 120 s; logs in {logs}")


def submit(url: str, script: Path, args: list[str], env: dict[str, str], timeout: float) -> Any:
    """``spark-submit`` ``script`` to the cluster at ``url`` (client mode, 8 task attempts)."""
    cmd = [
        str(SPARK_HOME / "bin" / "spark-submit"), "--master", url,
        "--conf", "spark.task.maxFailures=8",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}",
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", "spark.sql.shuffle.partitions=8",
        str(script), *args,
    ]  # fmt: skip
    # The executors' JVMs take the drivers' options (tests/conftest.py: SPARK_SUBMIT_OPTS).
    jvm = env.get("SPARK_SUBMIT_OPTS")
    if jvm:
        cmd[1:1] = ["--conf", f"spark.executor.extraJavaOptions={jvm}"]
    return subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
