"""moto's server, with SQS's ``DeleteMessage`` made safe against a concurrent send.

moto 5's ``Queue.delete_message`` rebuilds the queue's message list from a copy
without the lock that ``add_message`` appends under: a message sent by another
request thread in between is dropped, its ``SendMessageBatch`` having answered
success.  Under the fleet benchmark's load (three workers deleting while they
send children) that lost two children of one parent now and then, and their job
never completed.  This runs moto's server with the delete under that lock.

    python -m tests.fleet.moto_sqs_server -H 127.0.0.1 -p 5000

``serve()`` starts it on a free loopback port (the chaos test, the benchmark).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
from moto.server import main
from moto.sqs import models

REPO = Path(__file__).resolve().parents[2]

_delete = models.Queue.delete_message


def _locked_delete(self: Any, receipt_handle: str) -> None:
    with self._messages_lock:
        _delete(self, receipt_handle)


models.Queue.delete_message = _locked_delete  # type: ignore[method-assign]


@contextlib.contextmanager
def serve() -> Iterator[str]:
    """This server in a process of its own on 127.0.0.1; yields its endpoint."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fleet.moto_sqs_server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        client = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
        for _ in range(600):
            try:
                client.list_queues()
                break
            except Exception:
                if process.poll() is not None:
                    raise RuntimeError("moto's server exited at start") from None
                time.sleep(0.1)
        else:
            raise RuntimeError("moto's server did not start in 60 s")
        yield endpoint
    finally:
        process.terminate()
        process.wait()


if __name__ == "__main__":
    main()
