"""A proxy run as a child process: it prints ``PORT n`` once bound, and stops when its
standard input closes (``delay_proxy``, ``counting_proxy``)."""

from __future__ import annotations

import subprocess
import sys
from types import TracebackType


class ProxyProcess:
    """Start with :meth:`_start` (the script and its arguments); leaving the block stops it."""

    name = "proxy"

    def __init__(self) -> None:
        self.endpoint_url = ""
        self._process: subprocess.Popen[str] | None = None

    def _start(self, script: str, *args: str) -> None:
        self._process = subprocess.Popen(
            [sys.executable, script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()  # the proxy binds at once, or exits
        if not line.startswith("PORT "):
            self.__exit__(None, None, None)
            raise RuntimeError(
                f"the {self.name} did not start (it said {line!r}); run "
                f"`{sys.executable} {script} {' '.join(args)}` to see why"
            )
        self.endpoint_url = f"http://127.0.0.1:{int(line.split()[1])}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # the proxy's signal to stop
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
