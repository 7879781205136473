"""Edges of the refusals and settlings: an empty ``XOR_ACK_TABLE`` does not refuse a verb that
gives its own ``--table``; ``--report`` URIs judged as given (``s3a://`` refused, another
host's ``file://`` refused, ``file://localhost/x`` is ``/x``); an internationalised host as
browsers spell it (UTS #46: ``straße`` is ``xn--strae-oqa``); a ``fail`` a server error
refused raises that error; a timeout under a millisecond is a usage error naming its option;
a transaction's conflict whose read-back fails is not "may have landed"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner

from xor_ack_dynamodb import new_stamp
from xor_ack_dynamodb.table import TableSpec

from .hooks import Trigger, hooked_client, raising


def connection(table: TableSpec, endpoint: str) -> list[str]:
    """A chain command's options naming the test's table on DynamoDB Local."""
    return ["--table", table.name, "--endpoint-url", endpoint, "--region", "us-east-1"]


# -- cli/options.py: an empty XOR_ACK_TABLE refused even where --table is given -------------


def test_empty_xor_ack_table_does_not_refuse_a_table_given_after_the_verb(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """README: the connection options "may come before or after the command; given in both
    places, the one after the command wins".  With ``XOR_ACK_TABLE=""`` in the environment
    (a shell that exports it empty), ``xor-ack chain create job --table T`` names its table
    explicitly: the root group's check of the empty variable must not refuse it before the
    verb's own ``--table`` is looked at (it did: exit 2, nothing created)."""
    from xor_ack_dynamodb.cli import cli

    result = CliRunner().invoke(
        cli,
        ["chain", "create", "job-1", *connection(ddb_table, ddb_local_endpoint)],
        env={"XOR_ACK_TABLE": ""},
    )
    assert result.exit_code == 0, result.output


# -- pipeline/wordcount_command.py: --report goes through pathlib before it is checked -------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("s3a://bucket/report.json", None),  # refused: the report is a file of this machine
        ("file://otherhost/tmp/report.json", None),  # refused: another host's file
        ("file://localhost/tmp/rv-report.json", "/tmp/rv-report.json"),
    ],
)
def test_wordcount_report_uri_is_judged_as_given(given: str, expected: str | None) -> None:
    """``check_report_path`` refuses a Hadoop URI and maps ``file:`` URIs with ``local_path``,
    but the option's type is ``click.Path(path_type=Path)``: pathlib has already collapsed
    ``//`` ("s3a:/bucket/..", "file:/localhost/.."), so ``is_remote`` never matches and
    ``local_path`` never sees the host: ``s3a://bucket/report.json`` is written under the
    working directory, ``file://localhost/tmp/x`` to ``/localhost/tmp/x``, another host's
    file to ``/otherhost/...``."""
    import click

    from xor_ack_dynamodb.pipeline.wordcount_command import wordcount

    ctx = click.Context(wordcount)
    param = next(p for p in wordcount.params if p.name == "report_path")
    if expected is None:
        with pytest.raises(click.BadParameter):
            param.process_value(ctx, param.type_cast_value(ctx, given))
    else:
        assert param.process_value(ctx, param.type_cast_value(ctx, given)) == Path(expected)


# -- dashboard/config.py: IDN hosts encoded with IDNA 2003, not as browsers do --------------


def test_public_url_idn_host_is_matched_as_browsers_send_it() -> None:
    """Browsers serialise a host with UTS #46 non-transitional processing (WHATWG URL):
    ``straße.example`` is ``xn--strae-oqa.example`` in ``Origin`` and ``Host``.  Python's
    ``"idna"`` codec is IDNA 2003 and maps ß to "ss": the dashboard trusts
    ``https://strasse.example``, another domain, and refuses every action from its own pages
    as cross-site (the bug the change set out to fix, left for these names)."""
    from xor_ack_dynamodb.dashboard.config import PublicUrl

    public = PublicUrl.parse("https://straße.example/ops")
    assert public.origin == "https://xn--strae-oqa.example"
    assert public.host == "xn--strae-oqa.example"


# -- _core/endings.py: a fail answered by 5xx is re-sent, then told StaleLocalData ----------


def _server_error() -> ClientError:
    """A 500 as botocore raises it once its own re-sends are spent."""
    return ClientError(
        {
            "Error": {"Code": "InternalServerError", "Message": "injected 500"},
            "ResponseMetadata": {"HTTPStatusCode": 500, "RetryAttempts": 0},
        },
        "UpdateItem",
    )


async def test_fail_refused_by_a_server_error_is_not_told_stale_local_data(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """DynamoDB answers the fail's UpdateItem with a 500 (nothing written: the chain reads
    back live).  ``REPLY_STEP[("fail", UNKNOWN, TWICE)]`` is now REREAD, and ``fail`` loops:
    the chain is live, so the fail is sent again, up to 3 times, and the caller gets
    ``StaleLocalData`` ('"f" changed while it was being failed ... retry the fail'), with no
    cause: nothing changed, the server failed.  A stamp in the same spot raises the reply's
    error once the item proves it did not land (``_ITEM_DECIDES_ROWS``: "landed: done; not:
    the error"), and so did fail before.  Callers that close chains on DynamoDB errors
    (``spark.chain_batches._close``: ``DYNAMODB_ERRORS``) let StaleLocalData escape."""
    outage = Trigger(raising(_server_error()), times=0)
    async with hooked_client(kind, local[0], local[1].name, before={"update_item": outage}) as ack:
        await ack.create("f", new_stamp())
        outage.arm(10)
        with pytest.raises(ClientError) as caught:
            await ack.fail("f", "bad input")
    assert caught.value.response["Error"]["Code"] == "InternalServerError"


# -- _core/validate.py: the new 1 ms minimum, but the CLI's range still says "above 0" ------


def test_an_idle_timeout_under_a_millisecond_is_a_usage_error_naming_the_option(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """``check_timeout`` now refuses a timeout under 1 ms (``MIN_TIMEOUT``), but the CLI's
    ``DEADLINE`` type still takes anything above 0: ``chain create --idle-timeout 0.0005``
    passes the option's check and reaches the library, whose ``InvalidTimeout`` is printed
    as a user mistake (exit 1) naming ``idle_timeout``, not the option.  Any other bad
    ``--idle-timeout`` (0, -1, > a year) is a usage error, exit 2, naming
    ``--idle-timeout`` (README: an invalid option exits 2)."""
    from xor_ack_dynamodb.cli import cli

    result = CliRunner().invoke(
        cli,
        [
            "chain",
            "create",
            "job-2",
            "--idle-timeout",
            "0.0005",
            *connection(ddb_table, ddb_local_endpoint),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "--idle-timeout" in result.output


# -- _core/landing.py + reads._settle: a transaction conflict is proven not landed -----------


@pytest.mark.parametrize("op", ["create", "fail"])
async def test_a_transaction_conflict_whose_read_back_fails_is_not_told_may_have_landed(
    kind: str, local: tuple[str, TableSpec], op: str
) -> None:
    """``create`` and ``fail`` now re-read after ``TransactionConflictException`` (REREAD
    rows), through ``_settle``, which turns a failed read into ``UnsettledWrite`` ("the
    write may have landed ... fail the chain and replay its input").  A transaction
    conflict on the only send proves nothing was written (REPLY_STEP's own verdict: N), so
    a throttled read after it must not report an unknown outcome; before the change the
    conflict itself was raised (not landed, safe to retry)."""
    from xor_ack_dynamodb.errors import AmbiguousWrite

    from .hooks import client_error

    throttle = Trigger(
        raising(client_error("GetItem", "ProvisionedThroughputExceededException")), times=0
    )

    def conflict(params: dict[str, Any]) -> None:
        throttle.arm(1)  # the read that follows is throttled
        raise client_error("UpdateItem", "TransactionConflictException")

    held = Trigger(conflict, times=0)
    async with hooked_client(
        kind,
        local[0],
        local[1].name,
        before={"update_item": held, "get_item": throttle},
        cache_size=0,
    ) as ack:
        if op == "fail":
            await ack.create("k", new_stamp())
        held.arm(1)
        try:
            if op == "create":
                await ack.create("k", new_stamp())
            else:
                await ack.fail("k", "bad input")
            outcome: object = None
        except Exception as exc:
            outcome = exc
    assert not isinstance(outcome, AmbiguousWrite), repr(outcome)
