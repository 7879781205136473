"""`xor-ack local stop` never kills a process it did not start, even one given the server's pid.

It used to check the recorded pid once (command line, start time), send SIGTERM, then wait
while *a* process had that pid and send SIGKILL to it after ``timeout``: a pid handed to
another process while it waited got the SIGKILL.  Now the server is held by a pidfd.

Reproduced for real, nothing in the module patched but the pause between two polls: a helper
process is the server's parent (as init is once `local start` has exited); when the server
dies of the SIGTERM the helper reaps it and, through /proc/sys/kernel/ns_last_pid, starts
an unrelated ``sleep`` with the very same pid.  The only hook is the poll's sleep, which
waits until that has happened (the 50 ms between two polls is when the reuse would occur).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from xor_ack_dynamodb.dynamodb.local import detached
from xor_ack_dynamodb.local import ServerState, server_status, state_file, stop_detached

NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")

# The helper: starts a fake server (its command line carries moto.server, so server_status
# recognises it), says its pid, reaps it when it dies, then gives its pid to a bystander.
# The fake server, whose stdout is the helper's, says "ready" once its SIGTERM handler is in.
_HELPER = r"""
import os, subprocess, sys, time
_SERVER = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(0.3), sys.exit(0)))\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)
# SIGTERM ends it 0.3 s later (a server shutting down): stop sees it alive, and waits
server = subprocess.Popen([sys.executable, "-c", _SERVER, "moto.server"])
print(server.pid, flush=True)
server.wait()
pid = server.pid
for _ in range(200):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    other = subprocess.Popen(["sleep", "600"])
    if other.pid == pid:
        break
    other.kill(); other.wait()
else:
    print("noreuse", flush=True)
    sys.exit(1)
print("reused", other.pid, flush=True)
other.wait()
print("bystander ended", other.returncode, flush=True)
"""


def _can_set_last_pid() -> bool:
    try:
        with NS_LAST_PID.open("w") as f:
            f.write(NS_LAST_PID.read_text().strip())
        return True
    except OSError:
        return False


def _proc_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@pytest.mark.skipif(not _can_set_last_pid(), reason="needs a writable ns_last_pid (root)")
def test_stop_does_not_sigkill_a_process_that_reused_the_servers_pid(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helper = subprocess.Popen(
        [sys.executable, "-c", _HELPER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert helper.stdout is not None
    try:
        # The helper's pid line and the fake server's "ready" (its SIGTERM handler is in,
        # its command line carries the marker), in whichever order they come.
        said = sorted(helper.stdout.readline().strip() for _ in range(2))
        assert said[1] == "ready", said
        pid = int(said[0])
        run_dir.mkdir(parents=True)
        state = ServerState(
            pid=pid,
            endpoint_url="http://127.0.0.1:9",
            kind="moto",
            data_dir=None,
            log_file=str(run_dir / "log"),
            started_at=time.time(),
            process_start=detached._process_start(pid),
        )
        state_file().write_text(state.to_json())
        assert server_status() == state  # it is recognised as the server `local start` made

        reused: list[str] = []

        def poll_pause(seconds: float) -> None:
            if not reused:  # the pid changes hands while stop waits between two polls
                reused.append(helper.stdout.readline())  # type: ignore[union-attr]
            time.sleep(seconds)

        fake_time = types.SimpleNamespace(
            sleep=poll_pause, monotonic=time.monotonic, time=time.time
        )
        monkeypatch.setattr(detached, "time", fake_time)

        stop_detached(timeout=0.5)

        assert reused and reused[0].split() == ["reused", str(pid)], reused
        time.sleep(0.2)
        state_now = _proc_state(pid)
        assert state_now not in (None, "Z", "X"), (
            f"`local stop` SIGKILLed pid {pid}, which by then was an unrelated `sleep` "
            f"(state {state_now}; helper says {helper.stdout.readline().strip()!r})"
        )
    finally:
        os.killpg(helper.pid, 9)
        helper.wait()
