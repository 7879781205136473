"""`xor-ack chain list|show|touch|fail`, `chain create --timeout` and `xor-ack sweep`,
against DynamoDB Local (its index and conditional writes are the reference)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner, Result

from xor_ack_dynamodb import ChainState, Stamp, SyncXorAckDynamoDB, new_stamp
from xor_ack_dynamodb.cli import Settings, cli
from xor_ack_dynamodb.cli import sweep as sweep_verb
from xor_ack_dynamodb.dynamodb import loops as _loops
from xor_ack_dynamodb.errors import InventoryMissing, SweepIncomplete, SweepStopped
from xor_ack_dynamodb.table import TableMismatch, TableSpec

from .test_cli import assert_usage_error, assert_user_error

#: A deadline this short has passed once the test sleeps OVERDUE_AFTER.
SHORT = 0.3
OVERDUE_AFTER = 0.5


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _json_lines(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _client(endpoint: str, spec: TableSpec) -> SyncXorAckDynamoDB:
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    return SyncXorAckDynamoDB(ddb, table=spec.name, partition_key=spec.partition_key)


def test_list_show_fail_and_sweep(ddb_local_endpoint: str, ddb_table: TableSpec) -> None:
    base = ("--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name)
    assert run(*base, "chain", "create", "plain").exit_code == 0
    made = run(*base, "chain", "create", "later", "--timeout", "600")
    assert made.exit_code == 0, made.output
    assert run(*base, "chain", "create", "late", "--timeout", str(SHORT)).exit_code == 0
    assert run(*base, "chain", "create", "idle", "--idle-timeout", "600").exit_code == 0
    assert run(*base, "chain", "create", "lost", "--timeout", "600").exit_code == 0
    failed = run(*base, "chain", "fail", "lost", "--reason", "worker lost")
    assert failed.stdout == "lost failed (worker lost)\n"
    time.sleep(OVERDUE_AFTER)

    def listed(status: str, *more: str) -> dict[str, dict[str, Any]]:
        return {
            c["tag"]: c
            for c in _json_lines(run(*base, "chain", "list", "--json", "--status", status, *more))
        }

    assert set(listed("open")) == {"plain", "later", "late", "idle"}
    overdue = listed("overdue")
    assert set(overdue) == {"late"}
    assert (overdue["late"]["state"], overdue["late"]["overdue"]) == ("overdue", True)
    assert set(listed("failed")) == {"lost"}
    assert listed("failed")["lost"]["reason"] == "worker lost"
    assert len(listed("open", "--limit", "2")) == 2

    shown = json.loads(run(*base, "chain", "show", "later", "--json").stdout)
    assert (shown["state"], shown["overdue"], shown["idle_timeout"]) == ("pending", False, None)
    assert shown["deadline"] == pytest.approx(time.time() + 600, abs=30)
    idle = json.loads(run(*base, "chain", "show", "idle", "--json").stdout)
    assert idle["idle_timeout"] == 600
    text = run(*base, "chain", "show", "late")
    assert text.exit_code == 0, text.output
    assert "state:    overdue" in text.stdout
    assert "deadline:" in text.stdout and "(overdue by " in text.stdout
    assert "(each stamp moves the deadline)" in run(*base, "chain", "show", "idle").stdout
    assert "deadline:" not in run(*base, "chain", "show", "plain").stdout

    swept = run(*base, "sweep")
    assert swept.exit_code == 0, swept.output
    lines = swept.stdout.splitlines()
    assert lines[0].startswith("late failed (timeout) at ")
    assert lines[1].startswith(f"swept {ddb_table.name}: 1 chain(s) failed (")
    assert len(lines) == 2
    again = _json_lines(run(*base, "sweep", "--json"))
    assert [(s["table"], s["failed"], s["tags"]) for s in again] == [(ddb_table.name, 0, [])]
    assert set(listed("failed")) == {"lost", "late"}
    assert listed("failed")["late"]["reason"] == "timeout"
    assert set(listed("open")) == {"plain", "later", "idle"}
    assert listed("overdue") == {}
    shown = json.loads(run(*base, "chain", "show", "late", "--json").stdout)
    assert (shown["state"], shown["reason"], shown["overdue"]) == ("failed", "timeout", False)

    text_list = run(*base, "chain", "list", "--status", "failed")
    assert text_list.stderr == "2 failed chain(s)\n"
    rows = sorted(line.split("\t") for line in text_list.stdout.splitlines())
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("late", "failed", "timeout"),
        ("lost", "failed", "worker lost"),
    ]


def test_a_late_stamp_or_touch_is_refused_and_touch_extends(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    base = ("--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name)
    assert run(*base, "chain", "create", "slow", "ab" * 8, "--timeout", str(SHORT)).exit_code == 0
    assert run(*base, "chain", "create", "kept", "cd" * 8, "--idle-timeout", "60").exit_code == 0
    assert run(*base, "chain", "create", "gone", "--timeout", str(SHORT)).exit_code == 0
    before = json.loads(run(*base, "chain", "show", "kept", "--json").stdout)["deadline"]
    time.sleep(OVERDUE_AFTER)
    touched = run(*base, "chain", "touch", "kept", "--timeout", "600")
    assert touched.exit_code == 0, touched.output
    after = json.loads(run(*base, "chain", "show", "kept", "--json").stdout)["deadline"]
    assert after > before + 500
    assert_user_error(run(*base, "chain", "stamp", "slow", "ab" * 8), 'ChainTimedOut: "slow"')
    shown = json.loads(run(*base, "chain", "show", "slow", "--json").stdout)
    assert (shown["state"], shown["reason"]) == ("failed", "timeout")
    # a late fail() is refused too: the chain's reason is "timeout", not the caller's
    late_fail = run(*base, "chain", "fail", "gone", "--reason", "worker lost")
    assert_user_error(late_fail, 'ChainTimedOut: "gone" missed its deadline')
    shown = json.loads(run(*base, "chain", "show", "gone", "--json").stdout)
    assert (shown["state"], shown["reason"]) == ("failed", "timeout")
    assert _json_lines(run(*base, "sweep", "--json"))[0]["failed"] == 0  # already failed


def test_sweep_watch_ends_cleanly_on_sigterm(ddb_local_endpoint: str, ddb_table: TableSpec) -> None:
    ack = _client(ddb_local_endpoint, ddb_table)
    ack.create("watched", new_stamp(), timeout=SHORT)
    time.sleep(OVERDUE_AFTER)
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL_DYNAMODB": ddb_local_endpoint,
        "XOR_ACK_TABLE": ddb_table.name,
    }
    code = "from xor_ack_dynamodb.cli import main; main()"
    with subprocess.Popen(
        [sys.executable, "-c", code, "sweep", "--watch", "0.2", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        second = json.loads(process.stdout.readline())  # it keeps sweeping
        process.send_signal(signal.SIGTERM)
        rest, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert (first["failed"], first["tags"]) == (1, ["watched"])
    assert second["failed"] == 0
    sweeps = 2 + len(rest.splitlines())
    assert stderr == (
        f"stopped by SIGTERM after {sweeps} sweep(s) of {ddb_table.name}: 1 chain(s) failed\n"
    )


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (("chain", "list", "--status", "late"), "Invalid value for '--status'"),
        (("chain", "list", "--limit", "0"), "Invalid value for '--limit'"),
        (("chain", "show", ""), "Invalid value for 'TAG': a tag cannot be empty"),
        (("chain", "show", "x", "--table", ""), "Invalid value for '--table'"),
        (("chain", "touch", "x", "--timeout", "0"), "Invalid value for '--timeout'"),
        (("chain", "create", "x", "--timeout", "-1"), "Invalid value for '--timeout'"),
        (("chain", "create", "x", "--idle-timeout", "0"), "Invalid value for '--idle-timeout'"),
        (("sweep", "--watch", "0"), "Invalid value for '--watch'"),
        (("sweep", "--region", ""), "Invalid value for '--region'"),
        (("sweep", "--endpoint-url", "nowhere"), "Invalid value for '--endpoint-url'"),
    ],
)
def test_bad_values_are_one_line_usage_errors(
    moto_endpoint: str, args: tuple[str, ...], starts: str
) -> None:
    assert_usage_error(run("--endpoint-url", moto_endpoint, *args), starts)


def test_user_mistakes_are_one_line(moto_endpoint: str, moto_table: TableSpec) -> None:
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert_user_error(run(*base, "chain", "show", "nobody"), '"nobody" does not exist')
    assert_user_error(run(*base, "chain", "touch", "nobody"), 'TagNotFound: "nobody"')
    assert run(*base, "chain", "create", "fixed", "--timeout", "600").exit_code == 0
    assert_user_error(run(*base, "chain", "touch", "fixed"), "InvalidTimeout")
    missing = ("--endpoint-url", moto_endpoint, "--table", "no-such-table")
    assert_user_error(run(*missing, "sweep"), "ResourceNotFoundException")
    assert_user_error(run(*missing, "chain", "list"), "ResourceNotFoundException")


def test_a_sweep_or_list_under_another_partition_key_names_the_tables_key(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """A sweeper configured with the wrong key (``--partition-key``, XOR_ACK_PARTITION_KEY)
    is told the table's key in one line, not a KeyError; nothing is written."""
    chains = _client(ddb_local_endpoint, ddb_table)
    chains.create("late", new_stamp(), timeout=SHORT)
    time.sleep(OVERDUE_AFTER)
    wrong = _client(ddb_local_endpoint, TableSpec(ddb_table.name, partition_key="jobID"))
    with pytest.raises(TableMismatch, match="partition key is tagID"):
        wrong.sweep()
    base = ("--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name)
    says = f"TableMismatch: table {ddb_table.name}'s partition key is tagID, not jobID"
    checked = f"TableMismatch: table {ddb_table.name} has key tagID (HASH), expected jobID"
    assert_user_error(run(*base, "--partition-key", "jobID", "sweep"), checked)  # first
    assert_user_error(run(*base, "--partition-key", "jobID", "chain", "list"), says)
    state = chains.get("late")
    assert state is not None and state.live  # left for a sweep under the right key


def test_a_sweep_under_another_partition_key_is_refused_with_nothing_overdue(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """With nothing overdue the sweep met no index entry to tell the key by: it said
    "0 chain(s) failed", exit 0, of a table it could not have swept.  The command checks
    the table's key first."""
    _client(ddb_local_endpoint, ddb_table).create("live", new_stamp(), timeout=3600)
    base = ("--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name)
    result = run(*base, "--partition-key", "jobID", "sweep")
    assert_user_error(result, f"TableMismatch: table {ddb_table.name}")
    assert "swept" not in result.output


@pytest.mark.parametrize("server", ["ddb_local_endpoint", "moto_endpoint"])
def test_a_sweep_or_list_of_a_table_from_before_the_inventory_says_to_upgrade_it(
    server: str, request: pytest.FixtureRequest
) -> None:
    """A table an earlier release made has no inventory index: the sweeper is told to run
    `table upgrade`, not DynamoDB's ValidationException (moto's server refuses the Query
    otherwise: a ResourceNotFoundException, "Invalid index")."""
    ddb_local_endpoint: str = request.getfixturevalue(server)
    ddb = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    old = TableSpec(name=f"old-{uuid.uuid4().hex[:10]}")
    ddb.create_table(
        TableName=old.name,
        AttributeDefinitions=[{"AttributeName": old.partition_key, "AttributeType": "S"}],
        KeySchema=old.key_schema(),
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        with pytest.raises(InventoryMissing, match="table upgrade"):
            _client(ddb_local_endpoint, old).sweep()
        base = ("--endpoint-url", ddb_local_endpoint, "--table", old.name)
        says = f"InventoryMissing: table {old.name} has no index xor_ack_open"
        assert_user_error(run(*base, "sweep"), says)
        assert_user_error(run(*base, "sweep", "--watch", "60"), says)
        assert_user_error(run(*base, "chain", "list", "--status", "overdue"), says)
        failed = f"InventoryMissing: table {old.name} has no index xor_ack_failed"
        assert_user_error(run(*base, "chain", "list", "--status", "failed"), failed)
    finally:
        ddb.delete_table(TableName=old.name)


def test_a_chain_listed_overdue_is_shown_overdue_however_long_the_listing_took(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No server: the listing reads its pages as it goes (16 shards, and more pages); a chain
    whose deadline passed while earlier pages were read is listed as overdue, and says so."""

    class Chains:
        def list_chains(self, status: str, limit: int | None) -> Any:
            time.sleep(0.3)  # the pages before this chain's
            yield ChainState(
                "late", Stamp(b"\x01" * 8), b"c", 1, (), 1.0, 1.0, deadline=time.time() - 0.1
            )

    monkeypatch.setattr(Settings, "chains", lambda self: Chains())
    (shown,) = _json_lines(run("--table", "jobs", "chain", "list", "--status", "overdue", "--json"))
    assert (shown["state"], shown["overdue"]) == ("overdue", True)
    text = run("--table", "jobs", "chain", "list", "--status", "overdue")
    assert text.stdout.split("\t")[:2] == ["late", "overdue"]


class _Stopping:
    """Stands in for the signal-set event: the watch loop ends after ``waits`` intervals."""

    signal = "SIGTERM"

    def __init__(self, waits: int) -> None:
        self.left = waits

    def wait(self, seconds: float) -> bool:
        self.left -= 1
        return self.left < 0


def scripted_sweeps(monkeypatch: pytest.MonkeyPatch, answers: list[Any], waits: int) -> None:
    """No server: each sweep of the command answers the next of ``answers`` (a list of
    tombstones, or an exception it raises); a --watch ends after ``waits`` intervals."""

    class Chains:
        def sweep(self, on_failed: Any = None) -> list[Any]:
            answer = answers.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return list(answer)

    @contextmanager
    def stopping() -> Any:
        yield _Stopping(waits=waits)

    monkeypatch.setattr(Settings, "chains", lambda self: Chains())
    monkeypatch.setattr(sweep_verb, "_check_key", lambda settings: None)  # no table to ask
    monkeypatch.setattr(sweep_verb, "_stop_on_signals", stopping)


def test_watch_reports_a_later_error_and_sweeps_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """No server: a sweep that fails after the first is one stderr line, not the end."""
    error = {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}
    throttled = ClientError(error, "Query")  # type: ignore[arg-type]
    scripted_sweeps(monkeypatch, [[], throttled, []], waits=2)
    result = run("--table", "jobs", "sweep", "--watch", "5", "--json")
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["failed"] for line in result.stdout.splitlines()] == [0, 0]
    assert result.stderr.splitlines() == [
        "error: ThrottlingException: slow down (sweeping again in 5 s)",
        "stopped by SIGTERM after 3 sweep(s) of jobs: 0 chain(s) failed",
    ]


def test_watch_reports_a_chain_it_cannot_fail_and_any_error_and_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No server: a hostile chain (left by its sweep, named on stderr), then a bug in a
    round (reported, swept again), then a good round: the watch never stops."""
    late = ChainState(
        "late", Stamp(b"\x01" * 8), b"c", 2, (), 1.0, 2.0, failed_at=2.0, reason="timeout"
    )
    refused = ClientError(
        {"Error": {"Code": "ValidationException", "Message": "item too large"}}, "UpdateItem"
    )
    incomplete = SweepIncomplete({"late": late}, {"hostile": refused})
    answers: list[Any] = [incomplete, KeyError("a bug of ours"), [late]]
    scripted_sweeps(monkeypatch, answers, waits=2)
    counted: list[dict[str, Any]] = []
    recorder = type("C", (), {"add": lambda self, n, a: counted.append(a)})()
    monkeypatch.setattr(_loops, "counter", recorder)
    result = run("--table", "jobs", "sweep", "--watch", "5", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["failed"], line["errors"]) for line in lines] == [
        (1, {"hostile": "ValidationException"}),
        (1, {}),
    ]
    assert result.stderr.splitlines() == [
        "error: hostile: ValidationException: item too large (left for the next sweep)",
        "error: KeyError: 'a bug of ours' (sweeping again in 5 s)",
        "stopped by SIGTERM after 3 sweep(s) of jobs: 2 chain(s) failed",
    ]
    assert [(c["loop"], c["error"]) for c in counted] == [
        ("sweep", "ValidationException"),
        ("sweep.watch", "KeyError"),
    ]
    answers[:] = [SweepIncomplete({}, {"hostile": refused})]  # one sweep: exit 1
    once = run("--table", "jobs", "sweep")
    assert once.exit_code == 1 and once.stderr.splitlines() == [
        "error: hostile: ValidationException: item too large (left for the next sweep)",
        "error: 1 overdue chain(s) could not be failed; sweep again",
    ]


def test_a_sweep_stopped_part_way_prints_the_chains_it_failed_then_the_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No server: a sweep whose later page was throttled after it failed a chain.  The
    chain is printed (it was not: only the error was), the error follows, exit 1; under
    --watch its chain counts in the total and the watch goes on."""
    late = ChainState(
        "late", Stamp(b"\x01" * 8), b"c", 2, (), 1.0, 2.0, failed_at=2.0, reason="timeout"
    )
    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "Query")
    stopped = SweepStopped([late], {}, 7, throttled)
    answers: list[Any] = [stopped]
    scripted_sweeps(monkeypatch, answers, waits=1)
    once = run("--table", "jobs", "sweep")
    assert once.exit_code == 1
    assert once.stdout.splitlines()[0].startswith("late failed (timeout) at ")
    assert "the sweep stopped at index shard 7" in once.stderr
    answers[:] = [[], stopped]
    watched = run("--table", "jobs", "sweep", "--watch", "5", "--json")
    assert watched.exit_code == 0, watched.output
    lines = [json.loads(line) for line in watched.stdout.splitlines()]
    assert [(line["failed"], line.get("stopped", "")[:32]) for line in lines] == [
        (0, ""),
        (1, "the sweep stopped at index shard"),
    ]
    assert watched.stderr.splitlines()[-1] == (
        "stopped by SIGTERM after 2 sweep(s) of jobs: 1 chain(s) failed"
    )


def test_watch_ends_when_the_first_sweep_fails(moto_endpoint: str) -> None:
    missing = ("--endpoint-url", moto_endpoint, "--table", "no-such-table")
    assert_user_error(run(*missing, "sweep", "--watch", "1"), "ResourceNotFoundException")
