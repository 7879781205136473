"""A stand-in for the ``aws`` command, for running docker-compose.yml's create-table script
without Docker: it implements exactly the ``aws dynamodb`` calls that script makes, with
the AWS CLI's argument shapes, through boto3 (endpoint, region and keys from the same
environment variables the AWS CLI reads).  Anything else exits 2, so a script change that
this stand-in does not know fails the test instead of passing silently.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import boto3
from botocore.exceptions import ClientError


def _options(args: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    it = iter(args)
    for flag in it:
        if not flag.startswith("--"):
            raise SystemExit(f"fake aws: unexpected argument {flag!r}")
        pairs[flag[2:]] = next(it)
    return pairs


def _shorthand(text: str) -> dict[str, Any]:
    """The AWS CLI shorthand ``Enabled=true,AttributeName=x``."""
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, value = part.split("=", 1)
        out[key] = {"true": True, "false": False}.get(value, value)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] != ["dynamodb"] or len(argv) < 2:
        print(f"fake aws: not supported: {argv}", file=sys.stderr)
        return 2
    client = boto3.client("dynamodb")
    command, rest = argv[1], argv[2:]
    if command == "wait":
        if rest[:1] != ["table-exists"]:
            return 2
        name = _options(rest[1:])["table-name"]
        for _ in range(100):
            with_status = client.describe_table(TableName=name)["Table"]["TableStatus"]
            if with_status == "ACTIVE":
                return 0
            time.sleep(0.1)
        return 255
    opts = _options(rest)
    try:
        if command == "describe-table" and set(opts) == {"table-name"}:
            result = client.describe_table(TableName=opts["table-name"])
        elif command == "create-table" and set(opts) == {"cli-input-json"}:
            result = client.create_table(**json.loads(opts["cli-input-json"]))
        elif command == "describe-time-to-live" and set(opts) == {"table-name", "query", "output"}:
            if (opts["query"], opts["output"]) != (
                "TimeToLiveDescription.TimeToLiveStatus",
                "text",
            ):
                return 2
            ttl = client.describe_time_to_live(TableName=opts["table-name"])
            print(ttl["TimeToLiveDescription"]["TimeToLiveStatus"])
            return 0
        elif command == "update-time-to-live" and set(opts) == {
            "table-name",
            "time-to-live-specification",
        }:
            result = client.update_time_to_live(
                TableName=opts["table-name"],
                TimeToLiveSpecification=_shorthand(opts["time-to-live-specification"]),
            )
        else:
            print(f"fake aws: not supported: {argv}", file=sys.stderr)
            return 2
    except ClientError as exc:
        print(f"An error occurred ({exc.response['Error']['Code']})", file=sys.stderr)
        return 254  # the AWS CLI's exit code for a service error
    result.pop("ResponseMetadata", None)
    print(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
