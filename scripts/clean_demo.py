"""What ``make clean`` removes from the demo's folder OUT: only what ``make demo`` made there.

    python scripts/clean_demo.py OUT

``make demo`` writes five things into OUT: the sample corpus (``corpus``), the word
count's output (``counts``) and report (``report.json``), and its DynamoDB Local's data
(``dynamodb``) and state (``run``).  Each goes only if it shows it is the demo's, by the
same marks the commands check before they replace their own output: the sample's marker
file, the output's manifest naming every entry, a report's fields, the data folder's
``.made-by-make-demo``, and a state folder holding only the server's own files.  A demo
stopped mid-run also leaves its run's hidden staging folders and report file: they go,
unless a staging folder keeps the output the run was replacing (``previous``).  Anything
else stays where it is and is named; OUT itself goes only once nothing else is in it.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from xor_ack_dynamodb.pipeline.corpus import is_sample
from xor_ack_dynamodb.pipeline.paths import is_report
from xor_ack_dynamodb.spark.errors import Refused
from xor_ack_dynamodb.spark.paths import STAGING_MARK, OutputAction, judge_output, local_listing
from xor_ack_dynamodb.spark.report_stream import is_partial_of, unlocked_since

#: The files ``xor-ack local`` keeps in its state folder (a stopped server leaves no state).
RUN_FILES = {"local-dynamodb.lock", "local-dynamodb.log"}


def _is_output(path: Path) -> bool:
    try:
        listing = local_listing(str(path), tree=True)
        return judge_output(str(path), listing, overwrite=True) is OutputAction.REPLACE_OURS
    except Refused:
        return False


def _is_run(path: Path) -> bool:
    return {entry.name for entry in path.iterdir()} <= RUN_FILES


#: Each entry make demo writes into OUT, and how it shows it is the demo's.
DEMO: dict[str, Callable[[Path], bool]] = {
    "corpus": lambda p: p.is_dir() and not p.is_symlink() and is_sample(p),
    "counts": lambda p: not p.is_symlink() and _is_output(p),
    "report.json": lambda p: p.is_file() and not p.is_symlink() and is_report(p),
    "dynamodb": lambda p: p.is_dir() and not p.is_symlink() and (p / ".made-by-make-demo").exists(),
    "run": lambda p: p.is_dir() and not p.is_symlink() and _is_run(p),
}


#: What a demo run stopped mid-way leaves beside its output: its staging folders
#: (``.counts.xor-ack-RUN``, ``...-check``) and its report's temporary file.
_STAGING = re.compile(rf"\.counts\.{re.escape(STAGING_MARK)}[0-9A-Za-z_-]+")


def _is_left_by_a_stopped_run(path: Path) -> bool:
    """A staging folder (unless it keeps the former output, ``previous``: its only copy),
    or a report's temporary file no running demo holds locked."""
    if path.is_symlink():
        return False
    if _STAGING.fullmatch(path.name):
        return path.is_dir() and not (path / "previous").exists()
    if not (is_partial_of("report.json", path.name) and path.is_file()):
        return False
    return unlocked_since(str(path)) is not None  # else a demo still writing it


def clean(out: Path) -> list[str]:
    """Remove what make demo made in folder ``out``; return what stays there (sorted names)."""
    kept: list[str] = []
    for entry in sorted(out.iterdir()):
        ours = DEMO.get(entry.name, _is_left_by_a_stopped_run)
        if ours is not None and ours(entry):
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        else:
            kept.append(entry.name)
    if not kept:
        out.rmdir()
    return kept


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/clean_demo.py OUT", file=sys.stderr)
        return 2
    out = Path(argv[0])
    if not out.exists() and not out.is_symlink():
        return 0
    if out.is_symlink() or not out.is_dir():
        print(f"make clean: kept {out}: it is not a folder make demo made")
        return 0
    kept = clean(out)
    if kept:
        names = ", ".join(kept)
        print(f"make clean: kept in {out} what make demo did not make there: {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
