"""The library over Spark Connect: a server started here, the job run by the thin client.

The client is ``pyspark-client`` in its own virtualenv (it conflicts with the full
``pyspark``): ``.venv-connect`` (``make unit`` builds it) or ``XOR_ACK_CONNECT_PYTHON``.
Outside CI a missing client venv skips with the way to make it; under ``CI=true`` it fails.

The server's working folder (its logs, its warehouse, the remote test's corpus and
output) is closed to other users: the remote test runs its client as another OS user
(``users``), so that any step the library took on the client's own disk would fail.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from xor_ack_dynamodb.spark.paths import MANIFEST, manifest_text
from xor_ack_dynamodb.table import TableSpec

from .conftest import independent_count, make_corpus, read_counts
from .servers import ROOT, connect_server
from .users import User, client_user, python_for, run_as


def client_python() -> Path:
    explicit = os.environ.get("XOR_ACK_CONNECT_PYTHON")
    path = Path(explicit) if explicit else ROOT / ".venv-connect" / "bin" / "python"
    if not path.exists():
        message = (
            f"no Spark Connect client at {path}: build it with `make .venv-connect/.installed` "
            "(pyspark-client in its own virtualenv) or set XOR_ACK_CONNECT_PYTHON"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def server_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's working folder, closed to every other user (root's, mode 700)."""
    folder = tmp_path_factory.mktemp("connect-server")
    folder.chmod(0o700)
    return folder


@pytest.fixture(scope="module")
def connect_url(server_dir: Path) -> Iterator[str]:
    client_python()  # skip (or fail under CI) before starting a server for nothing
    with connect_server(server_dir, workdir=server_dir) as url:
        yield url


def test_xor_ack_wordcount_remote_over_spark_connect(
    connect_url: str, corpus: Path, tmp_path: Path, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """``xor-ack wordcount --remote`` (from the thin client) counts exactly, with faults."""
    out = tmp_path / "counts"
    report_path = tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SPARK_REMOTE", None)
    run = subprocess.run(
        [
            str(client_python()), "-m", "xor_ack_dynamodb.pipeline", "wordcount", str(corpus),
            "--output", str(out), "--report", str(report_path), "--remote", connect_url,
            "--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name,
            "--region", "us-east-1", "--fail-rate", "0.3", "--seed", "8", "--partitions", "8",
        ],
        env=env, capture_output=True, text=True, timeout=280, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert all(i["status"] == "acked" for i in report["inputs"])
    assert any(i["attempts"] > 1 for i in report["inputs"]), "no replay: the faults proved nothing"
    assert read_counts(out) == dict(independent_count(corpus))


@pytest.fixture(scope="module")
def other_user() -> Iterator[User]:
    with client_user() as user:
        yield user


def test_a_client_that_cannot_see_the_output_runs_a_job_to_a_folder_and_a_table(
    connect_url: str,
    server_dir: Path,
    other_user: User,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The client runs as another OS user: the corpus, the output folder (made empty
    before) and the warehouse are in the server's folder (mode 700, root's).  Every file step of the
    run (listing, staging, manifest, rename, the commit check) must run on the server;
    what the server's disk holds is judged there too (a sink that is a symbolic link)."""
    corpus = make_corpus(server_dir / "remote-corpus")
    (corpus / "part-1" / "a b+c%.txt").write_text("Odd name, words words\n", encoding="utf-8")
    out = server_dir / "remote-out" / "counts"
    out.mkdir(parents=True)  # made before, empty: the run's files go into it, the server's
    out.chmod(0o2750)  # steps too (it stays, with its mode)
    made = out.stat()
    linked = server_dir / "remote-link" / "v1"  # a user's empty folder, and a link to it
    linked.mkdir(parents=True)
    link = linked.with_name("current")
    link.symlink_to(linked)
    theirs = server_dir / "remote-theirs" / "counts"  # an output of ours, then the user's
    theirs.mkdir(parents=True)  # entries: a link to a run not there yet, a ".X.crc" file
    (theirs / "part-00000.csv").write_text("word,count\n")
    (theirs / MANIFEST).write_text(manifest_text("r1", "", ["part-00000.csv"]))
    (theirs / "latest").symlink_to(server_dir / "runs" / "2024-06")
    (theirs / ".notes.crc").write_text("the user's")
    python, python_env = python_for(other_user, client_python(), tmp_path_factory.mktemp("py"))
    env = {
        **python_env,
        "SPARK_REMOTE": connect_url,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), python_env.get("PYTHONPATH")])),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    looked = run_as(other_user, ["ls", str(out.parent)], env, 30)
    assert looked.returncode != 0 and "Permission denied" in looked.stderr  # closed to it
    argv = [
        python, str(ROOT / "tests" / "spark" / "jobs" / "remote.py"),
        str(corpus), str(out), "xa_remote.counts", "--table-of-chains", ddb_table.name,
        "--endpoint", ddb_local_endpoint, "--fail-rate", "0.3", "--seed", "8",
        "--link", str(link), "--theirs", str(theirs),
    ]  # fmt: skip
    run = run_as(other_user, argv, env, 280)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(run.stdout)
    expected = dict(independent_count(corpus))
    for name in ("folder", "table"):
        report = result[name]
        assert [i["status"] for i in report["inputs"]] == ["acked"] * 13, name
        assert report["output_state"] == "complete"
    replayed = [i for r in ("folder", "table") for i in result[r]["inputs"] if i["attempts"] > 1]
    assert replayed, "no replay: the faults proved nothing"
    keys = {i["key"] for i in result["folder"]["inputs"]}
    assert f"file:{corpus}/part-1/a b+c%.txt" in keys  # as the file is named, not URL-encoded
    assert read_counts(out) == expected  # read here, as root
    assert (out.stat().st_ino, out.stat().st_mode) == (made.st_ino, made.st_mode)
    assert result["table_counts"] == expected  # read by the client, through Spark
    table = ds.dataset(server_dir / "warehouse" / "xa_remote.db" / "counts").to_table()
    on_disk: Counter[str] = Counter()
    for word, n in zip(table["word"].to_pylist(), table["n"].to_pylist(), strict=True):
        on_disk[word] += n
    assert dict(on_disk) == expected  # each file's rows in the table once
    assert sorted(p.name for p in out.parent.iterdir()) == ["counts"]  # no staging left
    stopped = result["stopped"]
    assert "relative" in stopped["relative"] and "'relative/out'" in stopped["relative"]
    assert stopped["rounds"] == 1 and "\n" not in stopped["missing"]
    assert "xor_ack_module_nowhere" in stopped["missing"]
    # A sink that is a link on the server's disk: refused before its chains (Hadoop's
    # listing follows the link, and the commit replaced the link with a folder).
    assert "is a symbolic link" in stopped["link"] and str(linked) in stopped["link"]
    assert link.is_symlink() and not any(linked.iterdir())
    # Entries Hadoop's local listing leaves out are seen on the server too: not replaced.
    assert "'.notes.crc', 'latest'" in stopped["theirs"], stopped["theirs"]
    assert (theirs / "latest").is_symlink() and (theirs / ".notes.crc").exists()
    assert "the Spark Connect server's workers" in stopped["missing"]
