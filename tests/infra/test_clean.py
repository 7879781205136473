"""`make clean` removes from $(OUT) only what `make demo` made there: a user's files in it,
or a folder of the demo's name that is not the demo's, stay where they are."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xor_ack_dynamodb.pipeline.corpus import generate
from xor_ack_dynamodb.spark.paths import MANIFEST, SUCCESS, manifest_text

from .cfn import ROOT


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A venv make takes as there: its python is this one (no xor-ack: no server to stop)."""
    folder = tmp_path / "venv"
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return folder


def _demo_out(out: Path) -> None:
    """What make demo leaves in ``out``: corpus, counts, report, DynamoDB data and state."""
    generate(out / "corpus", files=3, lines=2, seed=7)
    counts = out / "counts"
    counts.mkdir()
    (counts / "part-00000.csv").write_text("word,count\na,1\n")
    (counts / SUCCESS).write_text("")
    names = ["part-00000.csv", SUCCESS]
    (counts / MANIFEST).write_text(manifest_text("run-1", str(out / "corpus"), names))
    (out / "report.json").write_text(json.dumps({"run_id": "r", "inputs": [], "totals": {}}))
    (out / "dynamodb").mkdir()
    (out / "dynamodb" / ".made-by-make-demo").touch()
    (out / "dynamodb" / "shared-local-instance.db").write_bytes(b"db")
    (out / "run").mkdir()
    (out / "run" / "local-dynamodb.log").write_text("started\n")


def _clean(venv: Path, out: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    assert make is not None, "make is needed to run make clean"
    # run from elsewhere: the caches make clean removes are then that folder's, not ours
    return subprocess.run(
        [make, "-s", "-f", str(ROOT / "Makefile"), "clean", f"VENV={venv}", f"OUT={out}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_make_clean_removes_what_make_demo_made_and_the_folder(venv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _demo_out(out)

    done = _clean(venv, out, tmp_path)

    assert done.returncode == 0, done.stderr
    assert not out.exists()
    assert not venv.exists()


def test_make_clean_removes_what_a_killed_make_demo_left_hidden(venv: Path, tmp_path: Path) -> None:
    """A demo stopped mid-run leaves its run's hidden staging folders and report file beside
    its output: make clean kept them, and OUT with them."""
    out = tmp_path / "out"
    _demo_out(out)
    staged = out / ".counts.xor-ack-3f56dcba41dc" / "rows" / "_xa_round=1"
    staged.mkdir(parents=True)
    (staged / "part-0.parquet").write_bytes(b"PAR1")
    (out / ".counts.xor-ack-3f56dcba41dc-check").mkdir()
    (out / ".report.json.0123456789ab.partial").write_text('{"key": "a"}\n')

    done = _clean(venv, out, tmp_path)

    assert done.returncode == 0, done.stderr
    assert not out.exists(), sorted(p.name for p in out.iterdir())


def test_make_clean_keeps_a_former_output_a_killed_run_displaced(
    venv: Path, tmp_path: Path
) -> None:
    """Killed between the commit's renames, a run keeps the former output in its staging
    folder's ``previous``: the only copy of it, so make clean names it and keeps it."""
    out = tmp_path / "out"
    _demo_out(out)
    (out / "counts").rename(tmp_path / "former")
    staging = out / ".counts.xor-ack-3f56dcba41dc"
    staging.mkdir()
    (tmp_path / "former").rename(staging / "previous")

    done = _clean(venv, out, tmp_path)

    assert done.returncode == 0, done.stderr
    assert f"kept in {out} what make demo did not make there: .counts.xor-ack-3f56dcba41dc" in (
        done.stdout
    )
    assert (staging / "previous" / "part-00000.csv").exists()


def test_make_clean_keeps_what_make_demo_did_not_make(venv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _demo_out(out)
    (out / "notes.txt").write_text("mine\n")
    (out / "corpus" / "mine.txt").write_text("not the sample's\n")  # the corpus is not only it
    (out / "counts" / "extra.csv").write_text("x\n")  # nor are the counts
    (out / "dynamodb" / ".made-by-make-demo").unlink()  # someone else's data
    (out / "run" / "local-dynamodb.json").write_text("{}")  # a server still running

    done = _clean(venv, out, tmp_path)

    assert done.returncode == 0, done.stderr
    kept = "corpus, counts, dynamodb, notes.txt, run"
    assert f"make clean: kept in {out} what make demo did not make there: {kept}" in done.stdout
    assert (out / "notes.txt").read_text() == "mine\n"
    assert (out / "corpus" / "mine.txt").exists() and (out / "corpus" / "part-00").is_dir()
    assert (out / "counts" / "part-00000.csv").exists()
    assert (out / "dynamodb" / "shared-local-instance.db").read_bytes() == b"db"
    assert (out / "run" / "local-dynamodb.json").exists()
    assert not (out / "report.json").exists()  # the one entry that was the demo's


def test_make_clean_without_its_venv_leaves_out_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _demo_out(out)

    done = _clean(tmp_path / "no-venv", out, tmp_path)

    assert done.returncode == 0, done.stderr
    assert "cannot tell what make demo made there" in done.stdout
    assert (out / "report.json").exists() and (out / "corpus").is_dir()
