"""xor_ack_dynamodb.dynamodb.local: DynamoDB Local on loopback, the moto fallback said out loud, and
the detached server of `xor-ack local start|status|stop`."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from xor_ack_dynamodb import local
from xor_ack_dynamodb.dynamodb.local import install, launcher
from xor_ack_dynamodb.local import (
    LocalDynamoDB,
    LocalDynamoDBError,
    ServerState,
    dynamodb_local_command,
    install_dynamodb_local,
    server_status,
    start_detached,
    state_file,
    stop_detached,
)
from xor_ack_dynamodb.table import TableSpec, create_table, describe_table


def _listen_addresses(port: int) -> set[str]:
    """Local addresses of the LISTEN sockets on ``port`` (from /proc/net/tcp and tcp6)."""
    found: set[str] = set()
    for name in ("tcp", "tcp6"):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if int(port_hex, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found


#: 127.0.0.1 as /proc/net/tcp writes it, and as IPv4-mapped IPv6 in /proc/net/tcp6 (Java)
LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F"}


def _only_loopback(port: int) -> bool:
    found = _listen_addresses(port)
    return bool(found) and found <= LOOPBACK


def _port(endpoint_url: str) -> int:
    return int(endpoint_url.rsplit(":", 1)[1])


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc/net/tcp")
def test_dynamodb_local_listens_on_loopback_only(ddb_local_endpoint: str) -> None:
    # DynamoDB Local itself binds every interface; LoopbackDynamoDBLocal.java narrows it
    assert _only_loopback(_port(ddb_local_endpoint)), _listen_addresses(_port(ddb_local_endpoint))


def test_command_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XOR_ACK_CACHE_DIR", str(tmp_path))  # no launcher compiled there
    monkeypatch.setattr(launcher, "_javac", lambda: None)  # and no JDK compiler: source mode
    jar = Path("/x/DynamoDBLocal.jar")
    memory = dynamodb_local_command(jar, port=8123)
    assert memory[-5:] == ["-inMemory", "-port", "8123", "-sharedDb", "-disableTelemetry"]
    assert "-Dxorack.bindHost=127.0.0.1" in memory
    assert memory[:2] == ["java", "-XX:TieredStopAtLevel=1"]  # the JIT's first tier only
    full = dynamodb_local_command(jar, port=8123, full_jit=True)
    assert full == [arg for arg in memory if arg != "-XX:TieredStopAtLevel=1"]
    assert str(local.LAUNCHER) in memory
    on_disk = dynamodb_local_command(jar, port=8123, data_dir=Path("/data"))
    assert on_disk[-6:] == ["-dbPath", "/data", "-port", "8123", "-sharedDb", "-disableTelemetry"]
    assert "-inMemory" not in on_disk


@pytest.mark.ddblocal
def test_the_launcher_is_compiled_once_and_dynamodb_local_starts_from_its_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In source mode ``java`` compiled the launcher at every start (1.3-2.8 CPU-seconds)."""
    jar = install_dynamodb_local()
    folder = launcher.compiled_launcher(jar, root=tmp_path)
    assert folder is not None and (folder / "LoopbackDynamoDBLocal.class").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no temporary folder left

    def no_compile(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(launcher.subprocess, "run", no_compile)
    assert launcher.compiled_launcher(jar, root=tmp_path) == folder
    monkeypatch.setenv("XOR_ACK_CACHE_DIR", str(tmp_path))
    command = dynamodb_local_command(jar, port=8123)
    assert command[command.index("-cp") + 1 :][:2] == [
        f"{jar}{os.pathsep}{folder}",
        "LoopbackDynamoDBLocal",
    ]
    monkeypatch.undo()
    db = LocalDynamoDB(backend="dynamodb-local")  # the cache's class: the suite's own
    with db:
        cmdline = Path(f"/proc/{db.pid}/cmdline").read_bytes().split(b"\0")
        assert b"LoopbackDynamoDBLocal" in cmdline and str(local.LAUNCHER).encode() not in cmdline
        client = boto3.client("dynamodb", endpoint_url=db.endpoint_url, region_name="us-east-1")
        assert "TableNames" in client.list_tables()


def test_falls_back_to_moto_where_java_is_missing_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(install, "java_version", lambda: None)
    with LocalDynamoDB(backend="auto") as db:
        assert db.kind == "moto" and db.pid is None  # moto runs in this process
        client = boto3.client("dynamodb", endpoint_url=db.endpoint_url, region_name="us-east-1")
        assert "TableNames" in client.list_tables()
    err = capsys.readouterr().err
    assert "DynamoDB Local unavailable (Java is not installed" in err
    assert "using moto's server instead" in err


def test_pid_is_dynamodb_locals_java_process_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also: DynamoDB Local's own temporary files (its SQLite library, copied out at its
    first request and removed by the JVM only on a clean exit) are in a folder of the
    server's, removed by ``stop`` even after a SIGKILL."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    db = LocalDynamoDB(backend="dynamodb-local")
    assert db.pid is None
    with db:
        assert db.pid is not None
        cmdline = Path(f"/proc/{db.pid}/cmdline").read_bytes().split(b"\0")
        assert Path(cmdline[0].decode()).name == "java"
        boto3.client(
            "dynamodb", endpoint_url=db.endpoint_url, region_name="us-east-1"
        ).list_tables()
        assert [p.parent.parent for p in tmp_path.rglob("*sqlite4java*")] == [tmp_path]
        os.kill(db.pid, signal.SIGKILL)  # no shutdown hook runs
    assert db.pid is None
    assert list(tmp_path.iterdir()) == []


def test_reference_backend_refuses_to_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "java_version", lambda: 11)
    with pytest.raises(
        LocalDynamoDBError, match=r"Java 11 found, DynamoDB Local 3\.x needs Java 17"
    ):
        LocalDynamoDB(backend="dynamodb-local").start()


def test_a_data_dir_that_cannot_be_made_is_refused_saying_so(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(LocalDynamoDBError, match=r"the data directory .* cannot be created"):
        LocalDynamoDB(backend="auto", data_dir=afile / "data").start()  # not moto instead
    assert afile.read_text() == ""


def test_detached_moto_start_status_stop(run_dir: Path) -> None:
    assert server_status() is None
    state = start_detached(backend="moto")
    assert state.kind == "moto"
    assert state.endpoint_url.startswith("http://127.0.0.1:")
    assert json.loads(state_file().read_text())["pid"] == state.pid
    assert server_status() == state
    client = boto3.client("dynamodb", endpoint_url=state.endpoint_url, region_name="us-east-1")
    assert "TableNames" in client.list_tables()
    with pytest.raises(LocalDynamoDBError, match="already running"):
        start_detached(backend="moto")
    assert stop_detached() == state
    assert server_status() is None
    assert not state_file().exists()
    assert stop_detached() is None  # stopping twice is fine


def test_a_stale_or_broken_state_file_means_not_running(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = ServerState(
        pid=dead.pid,
        endpoint_url="http://127.0.0.1:9",
        kind="moto",
        data_dir=None,
        log_file=str(run_dir / "log"),
        started_at=0.0,
    )
    state_file().write_text(stale.to_json())
    assert server_status() is None
    assert not state_file().exists()
    state_file().write_text("{not json")
    assert server_status() is None
    # a live process that is not one of ours (pid reused) is not stopped
    state_file().write_text(
        ServerState(**{**stale.__dict__, "pid": os.getpid()}).to_json()  # this pytest
    )
    assert server_status() is None
    assert stop_detached() is None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_stop_leaves_alone_a_later_server_that_reuses_a_stale_pid(run_dir: Path) -> None:
    # another DynamoDB Local (a test's, the demo's) now has the pid the state file recorded:
    # its command line is the launcher's, but it is not the process that file was written for
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "LoopbackDynamoDBLocal"]
    )
    try:
        run_dir.mkdir(parents=True)
        ticks = int(Path(f"/proc/{other.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        recorded = {
            "pid": other.pid,
            "endpoint_url": "http://127.0.0.1:9",
            "kind": "dynamodb-local",
            "data_dir": None,
            "log_file": str(run_dir / "log"),
            "started_at": 0.0,
            "process_start": ticks - 1,  # the recorded server started just before this one
        }
        state_file().write_text(json.dumps(recorded))
        assert server_status() is None
        assert stop_detached() is None
        assert other.poll() is None  # still running
    finally:
        other.kill()
        other.wait()


def test_two_starts_at_once_leave_one_server_which_stop_stops(run_dir: Path) -> None:
    barrier = threading.Barrier(2)
    started: list[ServerState] = []
    refused: list[LocalDynamoDBError] = []

    def start() -> None:
        barrier.wait()
        try:
            started.append(start_detached(backend="moto"))
        except LocalDynamoDBError as exc:
            refused.append(exc)

    threads = [threading.Thread(target=start) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(started) == 1, started  # the other would run on, recorded by no state file
        assert len(refused) == 1 and "already running" in str(refused[0])
        assert stop_detached() == started[0]
    finally:
        for state in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(state.pid, signal.SIGKILL)


def test_detached_dynamodb_local_keeps_a_data_dir(run_dir: Path, tmp_path: Path) -> None:
    """Also: its temporary files are in the state folder's ``local-dynamodb-tmp`` (what a
    killed server left there goes at the next start), removed when it is stopped."""
    data = tmp_path / "data"
    scratch = run_dir / "local-dynamodb-tmp"
    scratch.mkdir(parents=True)
    (scratch / "sqlite-392-left-by-a-killed-server.so").write_bytes(b"")
    state = start_detached(backend="dynamodb-local", data_dir=data)
    spec = TableSpec(name=f"kept-{uuid.uuid4().hex[:8]}")
    try:
        assert state.kind == "dynamodb-local"
        assert state.data_dir == str(data.resolve())
        if Path("/proc/net/tcp").exists():
            assert _only_loopback(_port(state.endpoint_url))
        client = boto3.client("dynamodb", endpoint_url=state.endpoint_url, region_name="us-east-1")
        create_table(client, spec)
        assert [p.name.endswith("-libsqlite4java.so") for p in scratch.iterdir()] == [True]
    finally:
        assert stop_detached() == state
    assert not _listen_addresses(_port(state.endpoint_url))
    assert not scratch.exists()
    again = start_detached(backend="dynamodb-local", data_dir=data)
    try:
        client = boto3.client("dynamodb", endpoint_url=again.endpoint_url, region_name="eu-west-1")
        info = describe_table(client, spec.name)  # -sharedDb: any region sees it
        assert info.partition_key == spec.partition_key
        assert info.ttl_attribute == spec.ttl_attribute
    finally:
        stop_detached()


# A server whose main thread exits first, as the JVM's does on SIGTERM: /proc/<pid>/cmdline
# reads empty from then on, while another thread still holds the listening socket.
_MAIN_THREAD_EXITS_FIRST = """
import ctypes, signal, socket, sys, threading, time
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen()
print(sock.getsockname()[1], flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
threading.Thread(target=time.sleep, args=(0.5,)).start()  # the shutdown, holding the socket
ctypes.CDLL(None).pthread_exit(None)
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc (Linux)")
def test_stop_returns_only_once_every_thread_has_exited(run_dir: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _MAIN_THREAD_EXITS_FIRST, "moto.server"], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    run_dir.mkdir(parents=True)
    state = ServerState(
        pid=proc.pid,
        endpoint_url=f"http://127.0.0.1:{port}",
        kind="moto",
        data_dir=None,
        log_file=str(run_dir / "log"),
        started_at=0.0,
    )
    state_file().write_text(state.to_json())
    try:
        assert stop_detached() == state
        assert not _listen_addresses(port)
        assert not Path(f"/proc/{proc.pid}").exists()
    finally:
        proc.kill()
        proc.stdout.close()


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 where another HTTP server already answers."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_a_taken_port_is_refused_and_nothing_is_started(run_dir: Path, taken_port: int) -> None:
    # The other server answers HTTP: waiting for "an answer" alone would report success.
    with pytest.raises(LocalDynamoDBError, match=f"port {taken_port} on 127.0.0.1 is already in"):
        start_detached(backend="moto", port=taken_port)
    assert server_status() is None
    assert not state_file().exists()
    with pytest.raises(LocalDynamoDBError, match=f"port {taken_port} "):
        LocalDynamoDB(backend="moto", port=taken_port).start()


def test_a_relative_run_dir_as_make_demo_gives_serves_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make demo`` runs ``XOR_ACK_RUN_DIR=out/run xor-ack local start``: the server runs in
    that folder, so its temporary folder must be named absolute (relative, DynamoDB Local
    found no place for its SQLite library and answered every table request with a 500)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XOR_ACK_RUN_DIR", "out/run")
    state = start_detached(backend="dynamodb-local", data_dir=Path("out/dynamodb"))
    try:
        client = boto3.client("dynamodb", endpoint_url=state.endpoint_url, region_name="us-east-1")
        create_table(client, TableSpec(name="relative-run-dir"))
        assert any((tmp_path / "out/run/local-dynamodb-tmp").glob("*sqlite4java*"))
    finally:
        assert stop_detached() == state
    assert not (tmp_path / "out/run/local-dynamodb-tmp").exists()
