"""`xor-ack local start|status|stop` and the connection options every command takes: one they
do not use is refused (exit 2) before anything starts or stops, never silently ignored."""

from __future__ import annotations

from pathlib import Path

from xor_ack_dynamodb.cli import NOT_RUNNING

from .test_cli import assert_usage_error, run


def test_local_start_refuses_an_endpoint_url_and_names_the_port_option(run_dir: Path) -> None:
    """`--endpoint-url http://127.0.0.1:9000 local start` started a server on a free port
    (not 9000) and said nothing of the URL it was given."""
    for args in [
        ("--endpoint-url", "http://127.0.0.1:9000", "local", "start", "--backend", "moto"),
        ("local", "start", "--backend", "moto", "--endpoint-url", "http://localhost:9000"),
    ]:
        result = run(*args)
        assert_usage_error(result, "--endpoint-url is not for `xor-ack local start`")
        assert "pass --port 9000" in result.stderr, result.stderr
        assert result.stdout == ""  # no export line to eval
        assert run("local", "status").exit_code == NOT_RUNNING  # nothing started
    remote = run("--endpoint-url", "https://dynamodb.eu-west-1.amazonaws.com", "local", "start")
    assert_usage_error(remote, "--endpoint-url is not for `xor-ack local start`")
    assert "pass --port N" in remote.stderr, remote.stderr
    assert run("local", "status").exit_code == NOT_RUNNING


def test_local_status_and_stop_refuse_an_endpoint_url_and_stop_nothing(run_dir: Path) -> None:
    """`--endpoint-url URL local stop` stopped the one server, wherever it listened."""
    started = run("local", "start", "--backend", "moto")
    assert started.exit_code == 0, started.output
    other = "http://127.0.0.1:9"
    for verb, args in [
        ("stop", ("--endpoint-url", other, "local", "stop")),
        ("stop", ("local", "stop", "--endpoint-url", other)),
        ("status", ("--endpoint-url", other, "local", "status")),
        ("status", ("local", "status", "--endpoint-url", other)),
    ]:
        result = run(*args)
        assert_usage_error(result, f"--endpoint-url is not for `xor-ack local {verb}`")
        assert "leave --endpoint-url out" in result.stderr, result.stderr
        assert result.stdout == ""
    assert run("local", "status").exit_code == 0  # still running
    assert run("local", "stop").exit_code == 0


def test_local_commands_refuse_table_options_they_do_not_use(run_dir: Path) -> None:
    """`local status --table T --region R --partition-key K` exited as if they meant
    something, and `local start --table T` (without --create-table) made no table T."""
    for flag, value in [("--table", "mine"), ("--partition-key", "k"), ("--region", "eu-west-1")]:
        for args in [
            (flag, value, "local", "status"),
            ("local", "status", flag, value),
            ("local", "stop", flag, value),
        ]:
            result = run(*args)
            verb = args[args.index("local") + 1]
            assert_usage_error(result, f"{flag} is not for `xor-ack local {verb}`")
            assert f"leave {flag} out" in result.stderr, result.stderr
        start = run("local", "start", "--backend", "moto", flag, value)
        assert_usage_error(start, f"{flag} is for the table --create-table makes")
        assert start.stdout == ""
        assert run("local", "status").exit_code == NOT_RUNNING  # nothing started
    made = run("--table", "mine", "local", "start", "--backend", "moto", "--create-table")
    assert made.exit_code == 0, made.output
    assert "table mine ready" in made.stderr
    assert run("local", "stop").exit_code == 0


def test_local_start_says_how_to_stop_the_server_in_its_own_run_dir(run_dir: Path) -> None:
    """Under ``XOR_ACK_RUN_DIR`` (``make demo``, ``make dashboard``) the hint said `xor-ack
    local stop`, which looks in the default folder: "no local DynamoDB running", the
    server left up."""
    started = run("local", "start", "--backend", "moto")
    assert started.exit_code == 0, started.stderr
    assert f"stop it with `XOR_ACK_RUN_DIR={run_dir} xor-ack local stop`" in started.stderr
