"""What the dashboard's tests share: Debian's chromium, fresh tables, table snapshots."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb.table import TableSpec, create_table

#: How to get the browser: Playwright drives the distribution's chromium, never a download.
INSTALL_HINT = (
    "the dashboard's browser tests need Debian's chromium (apt-get install chromium; "
    ".ci/run installs it under CI) and Playwright for Python (make test installs it)"
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    """Where chromium is (``XOR_ACK_CHROMIUM`` first); under CI=true its absence fails."""
    for candidate in (
        os.environ.get("XOR_ACK_CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        "/usr/bin/chromium",
    ):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    missing(f"chromium not found: {INSTALL_HINT}")
    raise AssertionError("unreachable")


def missing(message: str) -> None:
    """Skip for want of a tool, except under CI, where the browser tests must run."""
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def dynamodb(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")


def chains(endpoint: str, spec: TableSpec | str) -> Any:
    """A chains client of the table (a ``SyncXorAckDynamoDB`` that lives as long as it is
    used: ``connect()``'s would be closed when its block ends)."""
    from xor_ack_dynamodb import SyncXorAckDynamoDB

    table = spec if isinstance(spec, str) else spec.name
    return SyncXorAckDynamoDB(dynamodb(endpoint), table=table)


def fresh_table(endpoint: str) -> TableSpec:
    spec = TableSpec(name=f"dash-{uuid.uuid4().hex[:12]}")
    create_table(dynamodb(endpoint), spec)
    return spec


def snapshot(endpoint: str, table: str) -> dict[str, dict[str, Any]]:
    """Every item of the table, by tag (a Scan: the tests may, the dashboard never does)."""
    client = dynamodb(endpoint)
    items: dict[str, dict[str, Any]] = {}
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for item in page["Items"]:
            items[item["tagID"]["S"]] = item
    return items


def changed(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """The tags whose item differs (added, removed or changed)."""
    return {tag for tag in before.keys() | after.keys() if before.get(tag) != after.get(tag)}


@pytest.fixture(scope="module")
def table_spec(ddb_local_endpoint: str) -> TableSpec:
    """One fresh table per test module on the session's DynamoDB Local."""
    return fresh_table(ddb_local_endpoint)


@contextlib.contextmanager
def dashboard_command(
    endpoint: str, table: str, token: str, *options: str
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``xor-ack dashboard OPTIONS`` as a user starts it: (the link it prints, the process);
    stopped with SIGTERM at the end, which it must answer with exit 0 within 15 s."""
    command = [
        sys.executable,
        "-c",
        "from xor_ack_dynamodb.cli import main; main()",
        "--endpoint-url",
        endpoint,
        "--table",
        table,
        "dashboard",
        *options,
    ]
    env = {**os.environ, "XOR_ACK_DASHBOARD_TOKEN": token}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        yield _first_line(process, 60), process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("xor-ack dashboard did not stop within 15 s of SIGTERM")
        assert code == 0, process.stderr.read() if process.stderr else ""


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            pytest.fail(f"xor-ack dashboard printed no link within {timeout} s")
    line = process.stdout.readline().strip()
    if not line:
        _, stderr = process.communicate(timeout=10)
        pytest.fail(f"xor-ack dashboard exited {process.returncode}: {stderr}")
    return line
