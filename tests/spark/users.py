"""An OS user other than the one the servers run as: a client that cannot see their files.

The tests run as root in CI (a fresh machine): :func:`client_user` creates a system
user (no home, no login shell) if there is none and removes it afterwards;
:func:`run_as` runs a command as that user, with a home folder of its own and only
the environment it is given; :func:`python_for` finds a Python that user can run
with the client virtualenv's packages (the virtualenv's own interpreter may live
under root's home, closed to it).  Not root: the tests that need it skip (fail
under CI).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

NAME = "xor-ack-client"


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: Path


@contextlib.contextmanager
def client_user() -> Iterator[User]:
    """The other user (created here if missing, removed afterwards if created here)."""
    if os.geteuid() != 0:
        message = "making another OS user needs root (the suite runs as root in CI)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    created = False
    try:
        pwd.getpwnam(NAME)
    except KeyError:
        subprocess.run(
            [_tool("useradd"), "--system", "--user-group", "--no-create-home", "--shell",
             "/usr/sbin/nologin", NAME],
            check=True, capture_output=True,
        )  # fmt: skip
        created = True
    entry = pwd.getpwnam(NAME)
    home = Path(tempfile.mkdtemp(prefix="xor-ack-client-home-"))
    os.chown(home, entry.pw_uid, entry.pw_gid)
    try:
        yield User(NAME, entry.pw_uid, entry.pw_gid, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if created:
            subprocess.run([_tool("userdel"), NAME], check=False, capture_output=True)


def run_as(user: User, argv: list[str], env: dict[str, str], timeout: float) -> Any:
    """``argv`` as ``user`` (its own uid, gid and no other group), in its home folder."""
    full = {"HOME": str(user.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
    return subprocess.run(
        argv,
        user=user.uid,
        group=user.gid,
        extra_groups=[],
        cwd=user.home,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def python_for(user: User, venv_python: Path, scratch: Path) -> tuple[str, dict[str, str]]:
    """A Python ``user`` can run that imports what ``venv_python`` does: it, and its env.

    The virtualenv's interpreter itself if the user can run it; else an interpreter of
    the same version the user can run (``/usr/bin/python3.X``), given the virtualenv's
    packages on ``PYTHONPATH``; else a copy of the base interpreter in ``scratch``.
    """
    if _can_run(user, str(venv_python)):
        return str(venv_python), {}
    about = subprocess.run(
        [str(venv_python), "-c",
         "import json, site, sys; print(json.dumps([sys.base_prefix, "
         "'%d.%d' % sys.version_info[:2], site.getsitepackages()]))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    base, version, sites = json.loads(about.stdout)
    env = {"PYTHONPATH": os.pathsep.join(sites)}
    for candidate in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        if (
            os.access(candidate, os.X_OK)
            and run_as(user, [candidate, "-c", ""], {}, 60).returncode == 0
        ):
            return candidate, env
    copy = scratch / "python"
    skip = shutil.ignore_patterns("site-packages", "test", "__pycache__", "*.a")
    shutil.copytree(base, copy, ignore=skip, symlinks=True)
    for folder, _, _ in os.walk(copy):
        os.chmod(folder, 0o755)
    scratch.chmod(0o755)
    return str(copy / "bin" / f"python{version}"), {**env, "LD_LIBRARY_PATH": str(copy / "lib")}


def _can_run(user: User, python: str) -> bool:
    try:
        return bool(run_as(user, [python, "-c", ""], {}, 60).returncode == 0)
    except OSError:  # not found, or a folder on its way closed to the user
        return False


def _tool(name: str) -> str:
    """``useradd`` / ``userdel``: on PATH, else where Debian and Ubuntu put them."""
    return shutil.which(name) or f"/usr/sbin/{name}"
