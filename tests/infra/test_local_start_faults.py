"""`xor-ack local start` under what a user's machine does to it: a signal while the server
starts, a damaged state file, a port taken while the JVM starts.  The rules: no server left
running that `local stop` cannot find, a refusal in one line, a start that says success
only for its own server."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from xor_ack_dynamodb.dynamodb.local import detached
from xor_ack_dynamodb.local import (
    LocalDynamoDBError,
    ServerState,
    java_problem,
    server_status,
    start_detached,
    state_file,
    stop_detached,
)

LINUX = Path("/proc/self/task").is_dir()
needs_java = pytest.mark.skipif(java_problem() is not None, reason="needs Java 17")


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xor_ack_dynamodb.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _pids_with(needle: bytes) -> list[int]:
    """Processes whose command line contains ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


# --- 1. a SIGTERM / SIGHUP to `local start` while it waits leaves an orphan JVM ------------


@needs_java
@pytest.mark.skipif(not LINUX, reason="needs /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_local_start_while_it_waits_leaves_no_orphan_server(
    run_dir: Path, sig: signal.Signals
) -> None:
    """`timeout 1 xor-ack local start`, a CI job cancelled, a terminal closed: the server,
    in a session of its own, must not run on with no state file that `local stop` finds."""
    needle = f"-Djava.io.tmpdir={(run_dir / 'local-dynamodb-tmp').resolve()}".encode()
    start = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "xor_ack_dynamodb.cli",
            "local",
            "start",
            "--backend",
            "dynamodb-local",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    orphans: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while not _pids_with(needle) and time.monotonic() < deadline:
            assert start.poll() is None, start.communicate()
            time.sleep(0.02)
        assert _pids_with(needle), "the JVM never started"
        start.send_signal(sig)  # while it waits for the JVM to answer
        start.communicate(timeout=20)
        time.sleep(1.0)
        orphans = [pid for pid in _pids_with(needle) if _alive(pid)]
        recorded = server_status()
        stop = _cli("local", "stop")
        assert not (orphans and recorded is None), (
            f"after {sig.name} to `local start` (exit {start.returncode}): JVM {orphans} runs on, "
            f"no state file records it; `local stop` says: {stop.stdout.strip()!r}"
        )
    finally:
        if start.poll() is None:
            start.kill()
            start.wait()
        for pid in _pids_with(needle):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# --- 2. a damaged state file (pid out of range) breaks status, stop and start ---------------


def test_a_state_file_with_an_out_of_range_pid_is_taken_as_damaged(run_dir: Path) -> None:
    """A damaged state file is meant to read as "none running" (``server_status``): one whose
    pid overflows a C int made every `local` command fail with "unexpected ... a bug", and
    `local start` could never start again until the user found and deleted the file."""
    run_dir.mkdir(parents=True)
    state_file().write_text(
        '{"pid": 99999999999, "endpoint_url": "http://127.0.0.1:9", "kind": "moto",'
        ' "data_dir": null, "log_file": "x", "started_at": 0}'
    )
    status = _cli("local", "status")
    start = _cli("local", "start", "--backend", "moto")
    try:
        assert status.returncode == 3 and "unexpected" not in status.stderr, (
            status.returncode,
            status.stderr.strip(),
        )
        assert start.returncode == 0, (start.returncode, start.stderr.strip())
    finally:
        with contextlib.suppress(Exception):
            state_file().unlink()
        stop_detached()


# --- 3. a port taken between the check and the server's bind: "started" at another's -------


class _Other(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@needs_java
def test_a_port_taken_while_the_jvm_starts_is_not_reported_as_our_server(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`local start --port 8000` while another server (`docker compose up`, another user's
    `local start`) comes up on 8000: the port is free at the check, taken before the JVM
    (1-2 s to listen) binds it.  The other server's answer was taken for ours: start said
    success, printed an export line pointing at the other server, and recorded a JVM that
    then died of EADDRINUSE."""
    real_popen = subprocess.Popen
    others: list[http.server.HTTPServer] = []
    port_box: list[int] = []

    def popen_then_taken(cmd: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        proc = real_popen(cmd, **kwargs)  # type: ignore[call-overload]
        port = int(cmd[cmd.index("-port") + 1])
        other = http.server.HTTPServer(("127.0.0.1", port), _Other)  # just after the check
        threading.Thread(target=other.serve_forever, daemon=True).start()
        others.append(other)
        port_box.append(port)
        return proc

    monkeypatch.setattr(
        detached,
        "subprocess",
        types.SimpleNamespace(
            Popen=popen_then_taken, STDOUT=subprocess.STDOUT, DEVNULL=subprocess.DEVNULL
        ),
    )
    outcome: ServerState | LocalDynamoDBError
    try:
        try:
            outcome = start_detached(backend="dynamodb-local")
        except LocalDynamoDBError as exc:
            outcome = exc
        monkeypatch.undo()
        if isinstance(outcome, ServerState):
            time.sleep(4)  # the JVM tries to bind
            later = server_status()
            pytest.fail(
                f"start_detached reported a server at {outcome.endpoint_url} (pid {outcome.pid}) "
                f"where another process listens; a few seconds later server_status() = {later}"
            )
    finally:
        monkeypatch.undo()
        stop_detached()
        for other in others:
            other.shutdown()
            other.server_close()
        for pid in _pids_with(f"-port\0{port_box[0] if port_box else -1}\0".encode()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
