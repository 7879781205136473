"""``xor-ack worker``: its options are checked before anything starts (usage errors exit 2)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from xor_ack_dynamodb.cli import cli

QUEUE = "http://127.0.0.1:9/123456789012/work"
HANDLER = "xor_ack_dynamodb.fleet.examples:countdown"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--queue-url", "work", "--handler", HANDLER], "not an http(s) URL"),
        (["--queue-url", QUEUE, "--handler", "countdown"], "not module:function"),
        (["--queue-url", QUEUE, "--handler", "no_such_module_x:f"], "cannot import"),
        (["--queue-url", QUEUE, "--handler", "json:nothing"], "has no function"),
        (["--queue-url", QUEUE, "--handler", HANDLER, "--concurrency", "0"], "--concurrency"),
        (["--queue-url", QUEUE, "--handler", HANDLER, "--wait-time", "21"], "--wait-time"),
        (["--queue-url", QUEUE, "--handler", HANDLER, "--dead-letter-queue-url", QUEUE], "differ"),
        (["--handler", HANDLER], "--queue-url"),
    ],
)
def test_bad_options_are_usage_errors(args: list[str], says: str) -> None:
    result = CliRunner().invoke(cli, ["worker", *args])
    assert result.exit_code == 2, result.output
    assert says in result.output


def test_the_verb_is_listed() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert "worker" in result.output and "fleet worker" in result.output
