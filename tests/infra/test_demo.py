"""`make demo` on a folder of its own: it replaces the DynamoDB Local data it made before, and
refuses, before writing anything, an $(OUT)/dynamodb it did not make; `make dashboard`
stops its DynamoDB Local however it is stopped."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .cfn import ROOT

#: A stand-in for the venv's xor-ack: it records its arguments and, as `local start`, prints
#: the export line the demo evaluates.
_XOR_ACK = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/../calls"
case "$*" in *"local start"*) echo "export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9";; esac
"""


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A venv that make takes as installed: this Python, the stamp, a stand-in xor-ack."""
    folder = tmp_path / "venv"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(sys.executable)
    xor_ack = folder / "bin" / "xor-ack"
    xor_ack.write_text(_XOR_ACK)
    xor_ack.chmod(0o755)
    (folder / ".installed-runtime").touch()
    return folder


def _demo(venv: Path, out: Path) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    assert make is not None, "make is needed to run make demo"
    # doctor and the DynamoDB Local install are their own targets, checked elsewhere
    skip = ["-o", "doctor", "-o", "dynamodb-local"]
    return subprocess.run(
        [make, "-s", "-C", str(ROOT), *skip, "demo", f"VENV={venv}", f"OUT={out}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def _calls(venv: Path) -> list[str]:
    calls = venv / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_make_demo_leaves_a_dynamodb_folder_it_did_not_make_alone(
    venv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    theirs = out / "dynamodb" / "shared-local-instance.db"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("someone's tables")
    done = _demo(venv, out)
    assert done.returncode != 0
    assert f"make demo: {out / 'dynamodb'} was not made by make demo" in done.stderr
    assert theirs.read_text() == "someone's tables"
    assert _calls(venv) == []  # refused before anything was written
    assert sorted(p.name for p in out.iterdir()) == ["dynamodb"]


def test_make_demo_replaces_the_dynamodb_folder_it_made_before(venv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = _demo(venv, out)
    assert first.returncode == 0, first.stderr
    (out / "dynamodb" / "shared-local-instance.db").write_text("the first run's tables")
    again = _demo(venv, out)
    assert again.returncode == 0, again.stderr
    assert not (out / "dynamodb" / "shared-local-instance.db").exists()  # a fresh table
    starts = [call for call in _calls(venv) if "local start" in call]
    assert len(starts) == 2 and all(f"--data-dir {out / 'dynamodb'}" in s for s in starts)


#: As ``_XOR_ACK``, and `local status` names an endpoint, `dashboard` serves until stopped.
_SERVING_XOR_ACK = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/../calls"
case "$*" in
  *"local status"*) echo "endpoint: http://127.0.0.1:9";;
  *dashboard*) exec sleep 60;;
esac
"""


@pytest.mark.parametrize("how", ["Ctrl-C", "SIGTERM to make"])
def test_make_dashboard_stops_its_dynamodb_local_however_it_is_stopped(
    venv: Path, tmp_path: Path, how: str
) -> None:
    """The recipe's EXIT trap stops the local server.  sh ran it on no signal at all (the
    server left running after Ctrl-C); with the signals trapped, only once the dashboard
    ended, which it never does: a SIGTERM to make (a service manager's stop) hung."""
    (venv / "bin" / "xor-ack").write_text(_SERVING_XOR_ACK)
    out = tmp_path / "out"
    (out / "dynamodb").mkdir(parents=True)
    make = shutil.which("make")
    assert make is not None
    proc = subprocess.Popen(
        [make, "-s", "-C", str(ROOT), "dashboard", f"VENV={venv}", f"OUT={out}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    calls = venv / "calls"
    try:
        deadline = time.monotonic() + 20
        while not (calls.exists() and "dashboard" in calls.read_text()):
            assert time.monotonic() < deadline, "the dashboard never started"
            time.sleep(0.1)
        time.sleep(0.5)
        if how == "Ctrl-C":  # the terminal's: the whole process group
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)  # TimeoutExpired: make never ended
        assert any("local stop" in line for line in calls.read_text().splitlines())
    finally:
        with contextlib.suppress(ProcessLookupError):  # the group this test started, if left
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
