"""docker-compose.yml: loopback ports, pinned images, a health check, and a one-shot
service that creates exactly TableSpec's table.  No Docker engine runs here: the file is
validated against the compose-spec JSON schema (check-jsonschema, also in .ci/validate-infra)
and the one-shot service's script is run with a stand-in `aws` (fake_aws.py) against a local
DynamoDB.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml  # type: ignore[import-untyped]

from xor_ack_dynamodb.local import DYNAMODB_LOCAL_VERSION
from xor_ack_dynamodb.table import TTL_ATTRIBUTE, TableSpec, delete_table, describe_table

from .cfn import ROOT

COMPOSE = ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def _check_compose(path: Path) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("check_jsonschema") is None:
        pytest.skip("check-jsonschema is not installed: pip install -e '.[dev]' (make test does)")
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec"]
    return subprocess.run([*command, str(path)], capture_output=True, text=True, check=False)


def test_the_compose_spec_schema_accepts_the_file() -> None:
    proc = _check_compose(COMPOSE)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_compose_spec_schema_refuses_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE.read_text().replace("    ports:\n", "    portz:\n", 1))
    proc = _check_compose(broken)
    assert proc.returncode == 1
    assert "'portz' was unexpected" in proc.stdout


def test_images_are_pinned(compose: dict[str, Any]) -> None:
    images = {name: svc["image"] for name, svc in compose["services"].items()}
    assert images["dynamodb-local"] == f"amazon/dynamodb-local:{DYNAMODB_LOCAL_VERSION}"
    for image in images.values():
        _, _, tag = image.partition(":")
        assert re.fullmatch(r"\d+(\.\d+)+", tag), f"{image} is not pinned to a version"


def test_ports_are_bound_to_loopback(compose: dict[str, Any]) -> None:
    ports = [p for svc in compose["services"].values() for p in svc.get("ports", [])]
    assert ports, "DynamoDB Local publishes its port"
    for port in ports:
        assert str(port).startswith("127.0.0.1:"), port


def test_dynamodb_local_is_health_checked_and_shared(compose: dict[str, Any]) -> None:
    ddb = compose["services"]["dynamodb-local"]
    assert ddb["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL")
    # one database for every access key and region, as `xor-ack local start` runs it
    assert {"-sharedDb", "-disableTelemetry"} <= set(ddb["command"])
    one_shot = compose["services"]["create-table"]
    assert one_shot["depends_on"]["dynamodb-local"]["condition"] == "service_healthy"
    assert one_shot["restart"] == "no"


def test_one_shot_service_creates_tablespecs_table(compose: dict[str, Any]) -> None:
    env = compose["services"]["create-table"]["environment"]
    spec = TableSpec()
    assert json.loads(env["XOR_ACK_CREATE_TABLE"]) == spec.create_request()
    assert env["XOR_ACK_TABLE"] == spec.name
    assert env["XOR_ACK_TTL_ATTRIBUTE"] == TTL_ATTRIBUTE
    assert env["AWS_ENDPOINT_URL_DYNAMODB"] == "http://dynamodb-local:8000"


def _script(compose: dict[str, Any]) -> str:
    """The one-shot service's shell script as the container's /bin/sh receives it."""
    service = compose["services"]["create-table"]
    assert service["entrypoint"] == ["/bin/sh", "-ec"]
    (script,) = service["command"]
    # compose interpolates $NAME and ${NAME}; the script escapes every $ as $$
    assert "$" not in script.replace("$$", ""), "an unescaped $ would be interpolated by compose"
    return str(script).replace("$$", "$")


@pytest.mark.parametrize("server", ["moto_endpoint", "ddb_local_endpoint"])
def test_one_shot_script_creates_the_table_idempotently(
    compose: dict[str, Any], server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    endpoint: str = request.getfixturevalue(server)
    shim = tmp_path / "bin" / "aws"
    shim.parent.mkdir()
    shim.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).with_name("fake_aws.py")}" "$@"\n'
    )
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = {k: str(v) for k, v in compose["services"]["create-table"]["environment"].items()}
    table = f"compose-{uuid.uuid4().hex[:10]}"  # a fresh name, same definition otherwise
    request_json = json.loads(env["XOR_ACK_CREATE_TABLE"])
    request_json["TableName"] = table
    env.update(
        XOR_ACK_TABLE=table,
        XOR_ACK_CREATE_TABLE=json.dumps(request_json),
        AWS_ENDPOINT_URL_DYNAMODB=endpoint,
        PATH=f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
    )
    env.pop("AWS_SESSION_TOKEN", None)
    outputs = []
    for _ in range(2):  # the second run finds the table and TTL in place
        proc = subprocess.run(
            ["/bin/sh", "-ec", _script(compose)], env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs == [
        f"table {table} created\nTTL on {TTL_ATTRIBUTE}\n",
        f"table {table} exists\nTTL on {TTL_ATTRIBUTE}\n",
    ]
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    spec = TableSpec(name=table)
    spec.check(client.describe_table(TableName=table)["Table"])
    info = describe_table(client, table)
    assert (info.ttl_status, info.ttl_attribute) == ("ENABLED", TTL_ATTRIBUTE)
    assert info.billing_mode == spec.billing_mode
    delete_table(client, table)
