"""A partition key that is not UTF-8 (a lone surrogate: what a non-UTF-8 byte of argv or of
the environment becomes in Python) is refused with the refusal of its API, like a bad tag
or --table: a usage error naming --partition-key, InvalidTableSpec, SweeperMisconfigured;
it was an "unexpected UnicodeEncodeError ... a bug" before."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.dynamodb.sweeper import SweeperMisconfigured, settings
from xor_ack_dynamodb.pipeline import cli as pipeline_cli
from xor_ack_dynamodb.table import InvalidTableSpec, TableSpec

BAD_KEY = "k\udcff"  # what `--partition-key $'k\xff'` is in sys.argv (surrogateescape)
NOWHERE = "http://127.0.0.1:9"  # nothing may be contacted: the refusal comes first


def test_table_spec_refuses_a_key_that_is_not_utf8_with_its_typed_error() -> None:
    with pytest.raises(InvalidTableSpec):
        TableSpec(partition_key=BAD_KEY)


@pytest.mark.parametrize(
    "args",
    [
        ["--endpoint-url", NOWHERE, "table", "create", "--partition-key", BAD_KEY],
        ["--endpoint-url", NOWHERE, "--partition-key", BAD_KEY, "chain", "list"],
    ],
    ids=["after-the-verb", "before-the-verb"],
)
def test_xor_ack_refuses_a_key_that_is_not_utf8_as_a_usage_error(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert "unexpected" not in result.output and "a bug" not in result.output, result.output
    assert result.exit_code == 2, result.output
    assert "--partition-key" in result.output, result.output


def test_the_word_count_refuses_a_key_that_is_not_utf8_as_a_usage_error(tmp_path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("a b\n")
    args = ["wordcount", str(tmp_path / "in"), "--output", str(tmp_path / "out")]
    args += ["--endpoint-url", NOWHERE, "--table", "chains", "--partition-key", BAD_KEY]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert "unexpected" not in result.output and "a bug" not in result.output, result.output
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "out").exists()


def test_the_sweeper_refuses_a_key_that_is_not_utf8_as_misconfigured() -> None:
    environment = {"XOR_ACK_TABLE": "chains", "XOR_ACK_PARTITION_KEY": BAD_KEY}
    with pytest.raises(SweeperMisconfigured, match="no lone surrogates"):
        settings(environment)
