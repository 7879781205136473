"""Every example in README.md and docs/*.md runs, as the examples convention says.

- A ```python block is a standalone script: it runs in a subprocess with the venv's
  Python, against DynamoDB Local, with the standard AWS environment pointing there
  and a fresh, empty table ``xor-ack-chains``.  It may import only the public API.
  ```python no-run blocks are only compiled, and there may be at most a handful.
- In a ```bash block every ``xor-ack ...`` command line must parse as the CLI parses
  it (verb, options, arguments), every ``make`` target must exist in the Makefile
  and every ``python some/script.py`` must name a file of the repository.  A block
  made only of ``xor-ack`` commands (the word count aside) also runs for real, under
  bash -e, with ``xor-ack local start|status|stop`` answered by the tests' server.
  Other commands (aws, docker, pip, spark-submit) are not checked: they need an
  account, an engine or a cluster that the tests do not have.

Test ids name the file and the line of the block's opening fence.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import click
import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb.table import TableSpec, create_table, delete_table

from .blocks import ROOT, SHELL_LANGUAGES, Block, all_blocks, commands, logical_lines
from .commands import make_targets, parse_xor_ack

BLOCKS = all_blocks()
PYTHON = [block for block in BLOCKS if block.language == "python"]
RUNNABLE_PYTHON = [block for block in PYTHON if "no-run" not in block.flags]
SHELL = [block for block in BLOCKS if block.language in SHELL_LANGUAGES]

#: What an example may import: the package's top level, its errors, the tuple-tree modules.
PUBLIC_MODULES = frozenset(
    {
        "xor_ack_dynamodb",
        "xor_ack_dynamodb.errors",
        "xor_ack_dynamodb.acker",
        "xor_ack_dynamodb.tuple_tree",
        "xor_ack_dynamodb.fleet",
        "xor_ack_dynamodb.spark",
        "xor_ack_dynamodb.dashboard",
    }
)
MAX_NO_RUN = 3
#: Commands too slow for a docs test (Spark jobs) or that serve until stopped (the
#: dashboard): their lines are parsed, never run.
NOT_RUN = frozenset({"wordcount", "wordcount-sample", "dashboard"})
TIMEOUT = 120


def _ids(blocks: list[Block]) -> list[object]:
    return [pytest.param(block, id=block.where) for block in blocks]


def _shell_commands(block: Block) -> list[list[str]]:
    return [words for line in logical_lines(block.code) for words in commands(line)]


def _runs_for_real(block: Block) -> bool:
    found = _shell_commands(block)
    return bool(found) and all(
        words[0] == "xor-ack" and not NOT_RUN.intersection(words) for words in found
    )


RUNNABLE_SHELL = [block for block in SHELL if _runs_for_real(block)]


@pytest.fixture
def docs_table(ddb_local_endpoint: str) -> Iterator[str]:
    """A fresh, empty ``xor-ack-chains`` on DynamoDB Local; yields the endpoint."""
    client = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    spec = TableSpec()
    try:
        delete_table(client, spec.name)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
    create_table(client, spec)
    try:
        yield ddb_local_endpoint
    finally:
        delete_table(client, spec.name)


def _environment(endpoint: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update(
        AWS_ENDPOINT_URL_DYNAMODB=endpoint,
        AWS_REGION="us-east-1",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        XOR_ACK_DOCS_ENDPOINT=endpoint,
    )
    return env


def _run(argv: list[str], block: Block, endpoint: str, cwd: Path, **env: str) -> None:
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env={**_environment(endpoint), **env},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr
        pytest.fail(f"{block.where}: the example ran longer than {TIMEOUT} s:\n{stderr}")
    if done.returncode != 0:
        pytest.fail(
            f"{block.where}: the example exited {done.returncode}\n"
            f"--- stdout\n{done.stdout}--- stderr\n{done.stderr}",
            pytrace=False,
        )
    # What the user sees besides the example's own output: no warning about the library's
    # folders (a run's staging folders are named ``.OUTPUT.xor-ack-RUN``).
    ours = [line for line in done.stderr.splitlines() if ".xor-ack-" in line]
    assert not ours, f"{block.where}: the example's stderr names the library's folders: {ours}"


@pytest.mark.ddblocal
@pytest.mark.parametrize("block", _ids(RUNNABLE_PYTHON))
def test_python_example_runs(block: Block, docs_table: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(block.code, encoding="utf-8")
    _run([sys.executable, str(script)], block, docs_table, tmp_path)


@pytest.mark.parametrize("block", _ids(PYTHON))
def test_python_example_uses_only_the_public_api(block: Block) -> None:
    tree = ast.parse(block.code, filename=block.where)  # no-run blocks must compile too
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            imported.add(node.module)
    private = sorted(
        name
        for name in imported
        if name.split(".")[0] == "xor_ack_dynamodb" and name not in PUBLIC_MODULES
    )
    assert not private, f"{block.where} imports {private}: use {sorted(PUBLIC_MODULES)}"


def test_no_run_examples_are_rare() -> None:
    no_run = [block.where for block in PYTHON if "no-run" in block.flags]
    assert len(no_run) <= MAX_NO_RUN, f"too many ```python no-run blocks: {no_run}"
    unknown = [block.where for block in PYTHON if set(block.flags) - {"no-run"}]
    assert not unknown, f"unknown flags after ```python: {unknown}"


def test_python_examples_are_fenced_as_python() -> None:
    """A block fenced ```py or ```python3 would escape the runner."""
    other = [b.where for b in BLOCKS if b.language in {"py", "python3", "pycon", "ipython"}]
    assert not other, f"fence these as ```python: {other}"


@pytest.mark.parametrize("block", _ids(SHELL))
def test_shell_example_commands_are_valid(block: Block) -> None:
    targets = make_targets()
    problems: list[str] = []
    for words in _shell_commands(block):
        line = " ".join(words)
        if words[0] == "xor-ack":
            try:
                parse_xor_ack(words[1:])
            except click.ClickException as refused:
                problems.append(f"`{line}`: {refused.format_message()}")
        elif words[0] == "make":
            missing = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
            missing = [target for target in missing if target not in targets]
            if missing:
                problems.append(f"`{line}`: no Makefile target {missing}")
        elif words[0] in {"python", "python3"} and _names_missing_script(words):
            problems.append(f"`{line}`: {words[1]} does not exist")
    assert not problems, f"{block.where}:\n" + "\n".join(problems)


def _names_missing_script(words: list[str]) -> bool:
    return len(words) > 1 and words[1].endswith(".py") and not (ROOT / words[1]).is_file()


@pytest.mark.ddblocal
@pytest.mark.parametrize("block", _ids(RUNNABLE_SHELL))
def test_shell_example_runs(block: Block, docs_table: str, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "xor-ack"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tests.docs.xor_ack_shim "$@"\n')
    shim.chmod(0o755)
    script = tmp_path / "example.sh"
    script.write_text("set -eo pipefail\n" + block.code, encoding="utf-8")
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    _run(["bash", str(script)], block, docs_table, tmp_path, PATH=path)
