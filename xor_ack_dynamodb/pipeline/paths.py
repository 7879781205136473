"""The word count's own paths: OUTPUT, ``--report`` and ``--work-dir`` kept apart from INPUT,
and the report file (refused if it is not ours, written atomically).

The output folder's rules (what may be replaced, the manifest) are the Spark
library's: :mod:`xor_ack_dynamodb.spark.paths`.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from ..spark.paths import is_inside as _inside
from ..spark.paths import is_remote, local_path, name_max, staging_too_long
from ..spark.paths import real_path as _real
from .errors import FolderUnwritable, PathsOverlap, Refused, ReportExists, ReportUnwritable


def check_paths(
    input_: str, output: str, report: str | Path | None = None, work_dir: str | None = None
) -> None:
    """Refuse OUTPUT / REPORT / WORK_DIR that would write into INPUT or swallow it."""
    source, target = _real(input_), _real(output)
    if _inside(target, source):
        raise PathsOverlap(
            f"output {output} is {'the input' if target == source else 'inside the input'} "
            f"{input_}: choose an --output outside it"
        )
    if _inside(source, target):
        raise PathsOverlap(
            f"output {output} contains the input {input_}: replacing it would delete the "
            "input; choose an --output outside it"
        )
    if report is not None:
        where = _real(str(report))
        if _inside(where, source):
            raise PathsOverlap(
                f"report {report} is in the input {input_}: it would be read as input "
                "or overwrite a file; choose a --report outside it"
            )
        if _inside(where, target):
            raise PathsOverlap(
                f"report {report} is in the output {output}, which holds only the counts "
                "(it is replaced as a whole); choose a --report beside it"
            )
        if _inside(target, where) or (work_dir is not None and _inside(_real(work_dir), where)):
            raise PathsOverlap(
                f"report {report} is a folder the run writes in (it holds the output "
                f"{output}{' or the --work-dir' if work_dir is not None else ''}): name a "
                "file for --report beside them"
            )
    if work_dir is not None:
        rows = _real(work_dir)
        if _inside(rows, source) or _inside(rows, target):
            raise PathsOverlap(
                f"--work-dir {work_dir} is in the input {input_} or the output {output}: "
                "choose one outside both"
            )


def check_report(report: Path, overwrite: bool) -> None:
    """An existing report is replaced only with ``--overwrite`` and only if it is ours."""
    if report.is_dir():
        raise ReportExists(f"report {report} is a folder: name a file for --report")
    _check_report_folder(report)
    if not os.path.lexists(report):
        return
    if not overwrite:
        raise ReportExists(
            f"report {report} exists: choose another --report, or pass --overwrite to "
            "replace a report that xor-ack wordcount wrote before"
        )
    if not is_report(report):
        raise ReportExists(
            f"report {report} is not a report of xor-ack wordcount, so --overwrite does "
            "not replace it: choose another --report"
        )


def is_report(path: Path) -> bool:
    """Is the file at ``path`` a report of xor-ack wordcount (JSON with its fields)?"""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and set(data) >= {"run_id", "inputs", "totals"}


def _check_report_folder(report: Path) -> None:
    """The report's folder is one, or can be made (checked before the run, not found after it)."""
    _check_folder(report.absolute().parent, f"report {report}", "--report", ReportUnwritable)
    folder = str(report.absolute().parent)
    if len(os.fsencode(_temporary(report, PID_SPAN).name)) > (limit := name_max(folder)):
        raise ReportUnwritable(
            f"report {report} is too long a name: it is written to .NAME.xor-ack-PID.tmp "
            f"beside it first, which must fit the {limit} bytes a name may have there; "
            "choose a shorter --report"
        )


def check_folders(output: str, work_dir: str | None) -> None:
    """OUTPUT's folder (the staging folder goes beside OUTPUT) and ``--work-dir`` are folders,
    or can be made: found before anything starts, not by the run's first write."""
    if not is_remote(output):
        where = Path(local_path(output)).parent
        _check_folder(where, f"output {output}", "--output", FolderUnwritable)
        limit = staging_too_long(output, RUN_ID_SPAN)
        if limit is not None:
            raise FolderUnwritable(
                f"output {output} is too long a name: the run stages beside it in "
                f".NAME.xor-ack-RUN-check, which must fit the {limit} bytes a name may have "
                "there; choose a shorter --output"
            )
    if work_dir is not None and not is_remote(work_dir):
        where = Path(local_path(work_dir))
        _check_folder(where, f"--work-dir {work_dir}", "--work-dir", FolderUnwritable)


def _check_folder(folder: Path, what: str, option: str, error: type[Refused]) -> None:
    """``folder`` is one, or can be made: its nearest existing ancestor (itself included) is a
    folder this process may write to."""
    ancestor = folder
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():  # a file, or a broken symbolic link
        raise error(
            f"{what} cannot be written: {ancestor} is not a folder; choose another {option}"
        )
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise error(
            f"{what} cannot be written: the folder {ancestor} is not writable; choose another "
            f"{option}"
        )


#: The longest process id (Linux's pid_max: 4,194,304) and run id (12 hex digits) a name
#: beside a report or the output holds
PID_SPAN, RUN_ID_SPAN = "9" * 7, "f" * 12


def _temporary(target: Path, pid: str) -> Path:
    """The hidden file a report is written to first, beside it."""
    return target.with_name(f".{target.name}.xor-ack-{pid}.tmp")


def write_atomically(target: Path, text: str) -> None:
    """Write ``text`` to a hidden temporary sibling, then rename it onto ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = _temporary(target, str(os.getpid()))
    try:
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
