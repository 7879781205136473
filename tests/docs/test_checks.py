"""The checks of tests/docs/test_examples.py catch what they are meant to catch."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from .blocks import blocks, commands, logical_lines
from .commands import make_targets, parse_xor_ack

FENCE = "```"


def test_blocks_carry_language_flags_and_the_line_of_their_fence(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        f"# title\n\n{FENCE}python\nprint(1)\n{FENCE}\n\ntext\n"
        f"{FENCE}python no-run\nimport os\n{FENCE}\n{FENCE}\nplain\n{FENCE}\n",
        encoding="utf-8",
    )
    found = [(b.line, b.language, b.flags, b.code) for b in blocks(doc)]
    assert found == [
        (3, "python", (), "print(1)\n"),
        (8, "python", ("no-run",), "import os\n"),
        (11, "", (), "plain\n"),
    ]


def test_an_unclosed_fence_is_an_error(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"{FENCE}python\nprint(1)\n", encoding="utf-8")
    with pytest.raises(ValueError, match="never closed"):
        blocks(doc)


def test_shell_lines_become_commands() -> None:
    script = (
        'eval "$(xor-ack local start)"   # points this shell at it\n'
        "X=1 make demo && make test\n"
        "spark-submit --archives job.tar.gz#environment \\\n"
        "  --conf a=b\n"
        "# a comment line\n"
    )
    found = [words for line in logical_lines(script) for words in commands(line)]
    assert found == [
        ["xor-ack", "local", "start"],
        ["make", "demo"],
        ["make", "test"],
        ["spark-submit", "--archives", "job.tar.gz#environment", "--conf", "a=b"],
    ]


def test_xor_ack_lines_parse_as_the_cli_parses_them() -> None:
    path, params = parse_xor_ack(["--region", "eu-west-1", "chain", "stamp", "job-1", "0f0f"])
    assert path == "xor-ack chain stamp"
    assert params == {"tag": "job-1", "stamp": b"\x0f\x0f", "token": None}  # hex parsed


@pytest.mark.parametrize(
    "args",
    [
        ["chain", "stamp", "job-1"],  # HEX missing
        ["chain", "frob", "job-1"],  # no such verb
        ["local", "start", "--backend", "docker"],  # not a choice
        ["table", "create", "--billing"],  # no such option
        ["chain"],  # a group, not a command
    ],
)
def test_wrong_xor_ack_lines_are_refused(args: list[str]) -> None:
    with pytest.raises(click.ClickException):
        parse_xor_ack(args)


def test_parsing_runs_nothing_and_leaves_the_cli_intact() -> None:
    parse_xor_ack(["chain", "create", "job-1"])  # would need a table if it ran
    from xor_ack_dynamodb.cli import chain_create

    assert chain_create.callback is not None
    assert chain_create.callback.__name__ == "chain_create"


def test_make_targets_are_the_makefiles() -> None:
    targets = make_targets()
    assert {"demo", "test", "bench"} <= targets
    assert "PHONY" not in targets
    assert not any(name.startswith("$") for name in targets)
