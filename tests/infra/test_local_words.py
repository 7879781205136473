"""`xor-ack local start`'s refusals say the command's options, not the Python API's (which
``LocalDynamoDB`` and ``start_detached`` get: ``data_dir``, ``directory=``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xor_ack_dynamodb.cli import NOT_RUNNING

from .test_cli import assert_user_error, run


def test_local_start_data_dir_refusal_names_no_python_keyword(
    run_dir: Path, tmp_path: Path
) -> None:
    """``xor-ack local start --data-dir FILE/data`` (a path under a file).

    It said "choose another --data-dir (data_dir=...)" to both audiences."""
    afile = tmp_path / "afile"
    afile.write_text("")
    result = run("local", "start", "--backend", "dynamodb-local", "--data-dir", str(afile / "d"))
    assert_user_error(result, "LocalDynamoDBError: the data directory")
    assert run("local", "status").exit_code == NOT_RUNNING
    assert "another data_dir" not in result.stderr, result.stderr
    assert "choose another --data-dir" in result.stderr, result.stderr


def test_local_start_run_dir_refusal_names_no_python_keyword(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``XOR_ACK_RUN_DIR=FILE/run xor-ack local start``.

    It said "set XOR_ACK_RUN_DIR (directory=...)": ``start_detached``'s keyword."""
    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.setenv("XOR_ACK_RUN_DIR", str(afile / "run"))
    result = run("local", "start", "--backend", "moto")
    assert_user_error(result, "LocalDynamoDBError: the run directory")
    assert "directory=" not in result.stderr and "XOR_ACK_RUN_DIR" in result.stderr, result.stderr
