"""One detached server per user (``xor-ack local start|status|stop``) and its state file."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from .install import LocalDynamoDBError, cache_dir, make_dir
from .server import (
    LISTENING,
    Backend,
    _make_data_dir,
    _port_for,
    _resolve,
    _say_fallback,
    _terminate,
    _wait_until_answering,
    dynamodb_local_command,
    moto_server_command,
)

#: Words in the command line of a server this package started (to recognise it by pid).
_MARKERS = (b"LoopbackDynamoDBLocal", b"moto.server")

#: Servers this process started detached, kept so they are reaped (not left as zombies or
#: reported as "still running" when the ``Popen`` is collected) if this process stops them.
_DETACHED: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class ServerState:
    """A detached local server, as recorded in the state file."""

    pid: int
    endpoint_url: str
    kind: str
    data_dir: str | None
    log_file: str
    started_at: float
    #: when the process started, in clock ticks since boot (Linux); None: not known
    process_start: int | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ServerState:
        data = json.loads(text)
        pid = int(data["pid"])
        if not 0 < pid < 2**31:  # a C int for os.kill (0, -1: process groups): damaged
            raise ValueError(f"pid {pid} is no process id")
        return cls(
            pid=pid,
            endpoint_url=str(data["endpoint_url"]),
            kind=str(data["kind"]),
            data_dir=None if data.get("data_dir") is None else str(data["data_dir"]),
            log_file=str(data["log_file"]),
            started_at=float(data["started_at"]),
            process_start=None if data.get("process_start") is None else int(data["process_start"]),
        )


def run_dir() -> Path:
    """Where the detached server's state and log files live: ``$XOR_ACK_RUN_DIR`` or the cache."""
    env = os.environ.get("XOR_ACK_RUN_DIR")
    return Path(env) if env else cache_dir() / "run"


def state_file(directory: Path | None = None) -> Path:
    return (directory or run_dir()) / "local-dynamodb.json"


def _scratch(directory: Path | None = None) -> Path:
    """The detached DynamoDB Local's temporary folder (``dynamodb_local_command``'s
    ``scratch``): made by the start, removed once the server has stopped.  Absolute: the
    server runs in the state folder, where a relative one would name another folder."""
    return ((directory or run_dir()) / "local-dynamodb-tmp").resolve()


def _running(pid: int) -> bool:
    """True while any thread of process ``pid`` runs (not yet exited, or a zombie).

    Not /proc/<pid>/cmdline: it reads empty as soon as the main thread has exited, while
    the JVM's other threads still run its shutdown and hold the listening socket.
    """
    with contextlib.suppress(ChildProcessError):
        # reap it if it is our own child that has exited (a zombie still "exists")
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process reusing the pid
    if not Path("/proc/self/task").is_dir():
        return True  # no /proc (macOS): the pid exists
    tasks = Path(f"/proc/{pid}/task")
    try:
        threads = list(tasks.iterdir())
    except OSError:
        return False
    for thread in threads:
        try:
            state = (thread / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # the thread has just gone
        if state not in ("Z", "X"):
            return True
    return False


def _process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot; None without /proc or process."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _is_our_server(state: ServerState) -> bool:
    """True while the server ``state`` records runs: its pid, started then, with our command.

    A pid reused by a later process, even another server of this package, is not it.
    """
    pid = state.pid
    if not _running(pid):
        return False
    if state.process_start is not None and _process_start(pid) != state.process_start:
        return False
    if not Path("/proc/self/cmdline").exists():
        return True  # no /proc (macOS): trust the pid
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return any(marker in cmdline for marker in _MARKERS)


def server_status(directory: Path | None = None) -> ServerState | None:
    """The detached server if it is running; a stale state file is removed."""
    path = state_file(directory)
    try:
        state = ServerState.from_json(path.read_text())
    except (FileNotFoundError, NotADirectoryError):  # none recorded (no such folder)
        return None
    except (IsADirectoryError, PermissionError) as exc:
        raise LocalDynamoDBError(
            f"the local DynamoDB's state file {path} cannot be read ({exc.strerror or exc}):"
            " set XOR_ACK_RUN_DIR to a folder of your own"
        ) from exc
    except (ValueError, KeyError, TypeError, OverflowError):  # damaged: no server known
        path.unlink(missing_ok=True)
        return None
    if not _is_our_server(state):
        path.unlink(missing_ok=True)
        return None
    return state


def start_detached(
    *,
    backend: Backend = "auto",
    port: int = 0,
    data_dir: Path | None = None,
    host: str = "127.0.0.1",
    startup_timeout: float = 60.0,
    directory: Path | None = None,
) -> ServerState:
    """Start a local DynamoDB that outlives this process and record it in the state file.

    Raises ``LocalDynamoDBError`` if one is already running (there is one per
    state directory) or it does not come up.  Starts at once wait for each other, so
    the later one sees the first running.
    """
    folder = directory or run_dir()
    make_dir(
        folder,
        "run directory",
        "pass directory=... or set XOR_ACK_RUN_DIR: a folder you can write",
        "set XOR_ACK_RUN_DIR to a folder you can write",
    )
    with _one_start_at_a_time(folder):
        return _start(backend, port, data_dir, host, startup_timeout, directory, folder)


@contextlib.contextmanager
def _one_start_at_a_time(folder: Path) -> Iterator[None]:
    """Hold the state directory's start lock (the lock file's, released when it is closed)."""
    with (folder / "local-dynamodb.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _start(
    backend: Backend,
    port: int,
    data_dir: Path | None,
    host: str,
    startup_timeout: float,
    directory: Path | None,
    folder: Path,
) -> ServerState:
    running = server_status(directory)
    if running is not None:
        raise LocalDynamoDBError(
            f"a local DynamoDB is already running at {running.endpoint_url} (pid {running.pid}); "
            "stop it first with `xor-ack local stop`"
        )
    port = _port_for(host, port)
    kind, jar, problem = _resolve(backend)
    data = data_dir.resolve() if data_dir is not None else None
    if kind == "dynamodb-local" and jar is not None:
        if data is not None:
            _make_data_dir(data)
        scratch = _scratch(directory)
        # No server runs (checked above, under the start lock): whatever a killed one left
        # in its temporary folder is dead weight.
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        # A server left running for a day of work: the full JIT repays its compiles.
        cmd = dynamodb_local_command(
            jar, port=port, host=host, data_dir=data, scratch=scratch, full_jit=True
        )
        what = "DynamoDB Local"
    else:
        if problem is not None:
            _say_fallback(problem)
        if data is not None:
            print(
                "xor-ack: moto keeps its tables in memory; --data-dir is ignored", file=sys.stderr
            )
            data = None
        cmd = moto_server_command(port=port, host=host)
        what = "moto server"
    log_path = folder / "local-dynamodb.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=folder,
            start_new_session=True,  # not killed by the terminal's Ctrl-C or hang-up
        )
    endpoint_url = f"http://{host}:{port}"

    def read_log() -> str:
        return log_path.read_text(errors="replace")

    # Until the state file records it, the server is stopped on any failure (also Ctrl-C):
    # never leave a server running that `local stop` cannot find.
    try:
        with _ending_signals_raise():
            listening = LISTENING if kind == "dynamodb-local" else None  # moto's: no line
            _wait_until_answering(proc, endpoint_url, startup_timeout, read_log, what, listening)
        state = ServerState(
            pid=proc.pid,
            endpoint_url=endpoint_url,
            kind=kind,
            data_dir=None if data is None else str(data),
            log_file=str(log_path),
            started_at=time.time(),
            process_start=_process_start(proc.pid),
        )
        tmp = state_file(directory).with_suffix(".tmp")
        try:
            tmp.write_text(state.to_json())
            tmp.replace(state_file(directory))
        except OSError as exc:
            raise LocalDynamoDBError(
                f"the {what} started, but where it runs could not be written to "
                f"{state_file(directory)} ({exc.strerror or exc}), so it was stopped: make "
                f"{folder} writable, or set XOR_ACK_RUN_DIR to a folder that is"
            ) from exc
    except BaseException:
        _terminate(proc)
        shutil.rmtree(_scratch(directory), ignore_errors=True)
        raise
    _DETACHED[proc.pid] = proc
    return state


@contextlib.contextmanager
def _ending_signals_raise() -> Iterator[None]:
    """SIGTERM or SIGHUP while a server starts (``timeout``, a CI job cancelled, a terminal
    closed) ends this process as Ctrl-C does, through the start's cleanup: the server, in
    a session of its own, ran on with no state file that `local stop` finds."""
    previous = {}
    with contextlib.suppress(ValueError):  # not the main thread: signals are the host's
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, _exit_on)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _exit_on(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


class _Held:
    """The recorded server's process, held so that no signal reaches a later process that
    was given its pid: by a pidfd where the system has them (Linux 5.3+), else by checking
    it is still that process (its start time, its command) before each signal."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.fd: int | None = None
        with contextlib.suppress(AttributeError, OSError):  # no pidfd_open, or it is gone
            self.fd = os.pidfd_open(state.pid)
        if self.fd is not None and not _is_our_server(state):  # reused before it was held
            self.close()
            self.gone = True
        else:
            self.gone = False

    def alive(self) -> bool:
        if self.gone:
            return False
        if self.fd is not None:
            ready, _, _ = select.select([self.fd], [], [], 0)
            if not ready:
                return True
        # Exited (its main thread, at least: a JVM's other threads may still run its
        # shutdown on older kernels) or no pidfd: still that process?
        return _is_our_server(self.state)

    def signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            elif _is_our_server(self.state):
                os.kill(self.state.pid, sig)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def stop_detached(directory: Path | None = None, *, timeout: float = 10.0) -> ServerState | None:
    """Stop the detached server (SIGTERM, then SIGKILL after ``timeout``); None if none ran.

    Only that process is signalled, never one that was given its pid since (``_Held``).
    """
    state = server_status(directory)
    if state is None:
        return None
    held = _Held(state)
    try:
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            held.signal(sig)
            deadline = time.monotonic() + wait
            while held.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            if not held.alive():
                break
        else:
            raise LocalDynamoDBError(f"local DynamoDB (pid {state.pid}) did not stop")
    finally:
        held.close()
    child = _DETACHED.pop(state.pid, None)
    if child is not None:
        child.poll()
    shutil.rmtree(_scratch(directory), ignore_errors=True)
    state_file(directory).unlink(missing_ok=True)
    return state
