"""What the chain verbs say when they refuse: in the command's words, at the right exit code."""

from __future__ import annotations

from xor_ack_dynamodb.table import TableSpec

from .test_cli import assert_user_error, run


def test_touch_of_a_chain_without_idle_timeout_names_the_option_to_pass(
    moto_table: TableSpec, moto_endpoint: str
) -> None:
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert run(*base, "chain", "create", "no-idle", "0102").exit_code == 0
    result = run(*base, "chain", "touch", "no-idle")
    assert_user_error(result, "InvalidTimeout:")
    assert "--timeout SECONDS" in result.stderr
    assert "touch(" not in result.stderr and "timeout=" not in result.stderr
