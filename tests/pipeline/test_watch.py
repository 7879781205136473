"""``xor-ack wordcount --watch --available-now``: files that arrive, counted once each."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline import cli as pipeline_cli
from xor_ack_dynamodb.pipeline.corpus import generate
from xor_ack_dynamodb.table import TableSpec

from .conftest import expected_counts, read_output

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]


def batches(out: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for folder in sorted(out.glob("batch=*")):
        total.update(read_output(folder))
    return total


def test_watch_counts_what_arrived_and_resumes_without_counting_twice(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    generate(inbox, files=4, lines=6, seed=3)
    out = tmp_path / "counts"
    args = ["wordcount", str(inbox), "-o", str(out), "--watch", "--available-now"]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    args += ["--fail-rate", "0.2", "--seed", "7"]
    first = CliRunner().invoke(pipeline_cli.main, args)
    assert first.exit_code == 0, first.output
    assert "4 files acked" in first.output
    assert batches(out) == expected_counts(inbox)

    (inbox / "late.txt").write_text("Late words arrive late\n", encoding="utf-8")
    again = CliRunner().invoke(pipeline_cli.main, args)
    assert again.exit_code == 0, again.output
    # Only the new file was counted by the second run: the checkpoint remembered the rest.
    assert "1 file acked" in again.output and "acked file:" in again.output
    assert batches(out) == expected_counts(inbox)


def test_watch_refuses_an_output_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("the user's\n", encoding="utf-8")
    args = ["wordcount", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--watch"]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 2 and "notes.txt" in result.output
    assert (tmp_path / "out" / "notes.txt").read_text(encoding="utf-8") == "the user's\n"
    usage = CliRunner().invoke(pipeline_cli.main, [*args[:4], "--available-now"])
    assert usage.exit_code == 2 and "--watch" in usage.output
