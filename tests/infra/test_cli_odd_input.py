"""The chain verbs on odd input: a time no date is, a tag with a line break in an error, a
reason or token that is no UTF-8, an odd number of hex digits, failing a failed chain:
each said in the command's words, on one line, with its own exit status."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import ChainState, Stamp
from xor_ack_dynamodb.cli import Settings
from xor_ack_dynamodb.errors import TagNotFound
from xor_ack_dynamodb.table import TableSpec

from .test_cli import run

#: A time another program wrote in nanoseconds: a finite number the items take, no date.
NANOSECONDS = 1_700_000_000_000_000_000


def _one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def test_chain_show_and_list_of_a_time_no_date_is_print_it_not_a_bug(
    moto_table: TableSpec, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item whose expires_at (or deadline) another tool wrote in nanoseconds decodes
    (it is a finite number), `chain show --json` prints it, but the text of `chain show`
    and `chain list` ended with "unexpected OSError ... (a bug)", exit 1 (``_when``: the
    fix `events follow` and the dashboard got was not made here)."""
    db = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    db.put_item(
        TableName=moto_table.name,
        Item={
            "tagID": {"S": "ns"},
            "stamp": {"B": b"\x01"},
            "version": {"N": "1"},
            "chain_id": {"B": b"\x02"},
            "created_at": {"N": "1700000000"},
            "updated_at": {"N": "1700000000"},
            "expires_at": {"N": str(NANOSECONDS)},
        },
    )
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    exact = run(*base, "chain", "show", "ns", "--json")
    assert exact.exit_code == 0, exact.output
    assert json.loads(exact.stdout)["expires_at"] == NANOSECONDS  # the item is readable
    shown = run(*base, "chain", "show", "ns")
    assert "a bug" not in shown.stderr, shown.stderr
    assert shown.exit_code == 0, shown.output
    assert "expires:" in shown.stdout

    class _Chains:
        def list_chains(self, status: str, limit: int | None) -> Any:
            state = ChainState("ns", Stamp(b"\x01"), b"\x02", 1, (), 1.0, 1.0)
            yield ChainState(**{**state.__dict__, "deadline": float(NANOSECONDS)})

    monkeypatch.setattr(Settings, "chains", lambda self: _Chains())
    listed = run("--table", "jobs", "chain", "list")
    assert "a bug" not in listed.stderr, listed.stderr
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.startswith("ns\tpending\t"), listed.stdout


class _Missing:
    """Stands in for ``SyncXorAckDynamoDB``: no chain under any tag."""

    def delete(self, tag: str) -> None:
        raise TagNotFound(tag)

    def fail(self, tag: str, reason: str) -> ChainState:
        raise TagNotFound(tag)

    def stamp(self, tag: str, stamp: bytes, token: str | None = None) -> Stamp:
        raise TagNotFound(tag)


@pytest.mark.parametrize(
    ("tag", "escaped", "mangled"),
    [
        ("two\nlines", '"two\\nlines"', '"two; lines"'),
        ("cr\rback", '"cr\\rback"', '"cr; back"'),
        ("sep\x1cthere", '"sep\\x1cthere"', '"sep; there"'),
    ],
)
def test_an_error_line_names_a_tag_with_a_line_break_as_it_is_escaped(
    monkeypatch: pytest.MonkeyPatch, tag: str, escaped: str, mangled: str
) -> None:
    """`chain show "two\\nlines"` says `"two\\nlines" does not exist`; `chain delete`,
    `fail` and `stamp` of the same tag said `"two; lines" does not exist`: another tag (one
    that may well exist), since ``_one_line`` split the message at the tag's line break
    (newline, CR, and every other character ``str.splitlines`` breaks at) before escaping."""
    monkeypatch.setattr(Settings, "chains", lambda self: _Missing())
    for args in (
        ("chain", "delete", tag),
        ("chain", "fail", tag),
        ("chain", "stamp", tag, "0102"),
    ):
        result = run("--table", "jobs", *args)
        assert result.exit_code == 1, result.output
        line = _one_error_line(result.stderr)
        assert mangled not in line, (args, line)
        assert f"TagNotFound: {escaped} " in line, (args, line)


def test_a_reason_that_is_not_utf8_is_a_usage_error_naming_the_option(
    moto_table: TableSpec, moto_endpoint: str
) -> None:
    """A --reason the shell gave as bytes that are not UTF-8 (Python reads them as lone
    surrogates, `--reason "$(printf 'bad\\xff')"`): the TAG and --token refuse such a value
    as a usage error (exit 2) naming themselves; --reason went to the library, whose
    `InvalidReason: reason must be encodable ...` came back as exit 1 in its words."""
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert run(*base, "chain", "create", "job", "0102").exit_code == 0
    result = run(*base, "chain", "fail", "job", "--reason", "bad\udcff")
    line = _one_error_line(result.stderr)
    assert result.exit_code == 2, line
    assert "--reason" in line, line
    state = json.loads(run(*base, "chain", "show", "job", "--json").stdout)
    assert state["state"] == "pending"  # nothing written


def test_failing_a_failed_chain_again_says_it_in_the_commands_words(
    moto_table: TableSpec, moto_endpoint: str
) -> None:
    """`chain fail TAG --reason y` on a chain failed before said `... when fail() came with
    reason "y" ...`: the library's call, not the command the user ran."""
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert run(*base, "chain", "create", "job", "0102").exit_code == 0
    assert run(*base, "chain", "fail", "job", "--reason", "x").exit_code == 0
    again = run(*base, "chain", "fail", "job", "--reason", "y")
    line = _one_error_line(again.stderr)
    assert again.exit_code == 1, line
    assert "fail()" not in line, line


def test_an_odd_length_hex_stamp_is_said_to_be_odd_not_said_not_hexadecimal(
    moto_table: TableSpec, moto_endpoint: str
) -> None:
    """`chain stamp job abc` answered "'abc' is not hexadecimal": it is; what is wrong is
    the odd number of digits (a byte is two), which the message should say."""
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    for args in (("chain", "stamp", "job", "abc"), ("chain", "create", "job", "0x123")):
        result = run(*base, *args)
        line = _one_error_line(result.stderr)
        assert result.exit_code == 2, line
        assert "is not hexadecimal" not in line, line
        assert any(word in line.lower() for word in ("odd", "even", "two digits", "whole byte"))


def test_a_token_that_is_not_utf8_is_refused_for_what_it_is_not_its_length(
    moto_endpoint: str,
) -> None:
    """`--token $'w\\xff'` (2 bytes as given) was refused with "must be 1 to 16 bytes of
    UTF-8, not 2 characters (2 bytes)": a size within the range, said to be out of it."""
    result = run("--endpoint-url", moto_endpoint, "chain", "stamp", "t", "01", "--token", "w\udcff")
    line = _one_error_line(result.stderr)
    assert result.exit_code == 2, line
    assert "(2 bytes)" not in line, line
    assert any(word in line.lower() for word in ("encod", "surrogate", "not valid utf-8")), line
