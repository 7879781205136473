"""An independent check of a run's counts: the finished files counted again, without Spark.

``xor-ack wordcount --verify`` reads every file the run reports as acked (or counted,
without tracking) once more in plain Python, counts its words with the definition of
``words.count_lines`` (line by line, not the job's fast path), and compares the sum with
the CSV files in OUTPUT.  It shares nothing with the job but that definition: no Spark,
no chains, no staging rows.  Local inputs only; a Hadoop URI input (``s3a://``...) is
not checked and the check says so.
"""

from __future__ import annotations

import csv
import os
import sys
from collections import Counter
from dataclasses import dataclass

from ..spark.examples.words import count_lines
from ..spark.input_listing import list_local, read_local
from ..spark.paths import is_remote, local_path, path_key, printable
from ..spark.report import TrackedReport
from .errors import Refused

#: Word counts in the sentence of a mismatch.
SHOWN = 3


@dataclass(frozen=True)
class Verification:
    """What the check found: ``ok``, or why not (``detail``)."""

    ok: bool
    checked: bool
    files: int = 0
    words: int = 0
    distinct: int = 0
    detail: str = ""


def _finished(report: TrackedReport) -> set[str]:
    return {i.key for i in report.endings() if i.status in ("acked", "counted")}


def recount(report: TrackedReport, input_: str) -> Counter[str]:
    """The words of every acked (or counted) file of ``report``, counted line by line."""
    finished = _finished(report)
    counts: Counter[str] = Counter()
    for entry in list_local(input_):
        if path_key(entry.path) not in finished:
            continue
        data = read_local(entry.path)
        if isinstance(data, str):  # Unreadable since the run
            raise OSError(f"{printable(entry.path)}: {data}")
        counts.update(count_lines(data.decode("utf-8").splitlines()))
    return counts


def read_output(output: str | os.PathLike[str]) -> Counter[str]:
    """The counts in OUTPUT's CSV files (header ``word,count``).

    Raises ``ValueError`` for a file without that header or a word found twice: the
    counts are summed by word, so a word twice is a count that went wrong.
    """
    counts: Counter[str] = Counter()
    folder = local_path(os.fspath(output))
    limit = csv.field_size_limit(sys.maxsize)  # a word may be longer than its 131,072
    try:
        for name in sorted(os.listdir(folder)):
            if name.endswith(".csv"):
                _read_counts(os.path.join(folder, name), counts, output)
    finally:
        csv.field_size_limit(limit)
    return counts


def _read_counts(path: str, counts: Counter[str], output: str | os.PathLike[str]) -> None:
    name = os.path.basename(path)
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return
        if header != ["word", "count"]:
            raise ValueError(f"{name}: header {header}, not word,count")
        for word, count in reader:
            if word in counts:
                raise ValueError(f"{word!r} appears twice in {output}")
            counts[word] = int(count)


def _difference(expected: Counter[str], found: Counter[str]) -> str:
    """The words whose counts differ, the first few by name."""
    differing = sorted(w for w in set(expected) | set(found) if expected[w] != found[w])
    shown = "; ".join(
        f"{w!r}: {found[w]} in OUTPUT, {expected[w]} recounted" for w in differing[:SHOWN]
    )
    more = f"; and {len(differing) - SHOWN:,} more" if len(differing) > SHOWN else ""
    return f"{len(differing):,} words differ ({shown}{more})"


def verify(report: TrackedReport, input_: str, output: str) -> Verification:
    """Compare OUTPUT with an independent count of the files ``report`` says finished."""
    if report.output_state == "kept":
        detail = f"{output} holds the former counts, kept: this run wrote none"
        return Verification(ok=True, checked=False, detail=detail)
    if is_remote(input_) or is_remote(output):
        return Verification(ok=True, checked=False, detail="not a local input or output")
    try:
        expected = recount(report, input_)
        found = read_output(output)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, csv.Error, Refused) as exc:
        return Verification(ok=False, checked=True, detail=f"could not recount: {exc}")
    files = len(_finished(report))
    if expected != found:
        return Verification(
            ok=False, checked=True, files=files, detail=_difference(expected, found)
        )
    return Verification(
        ok=True,
        checked=True,
        files=files,
        words=sum(expected.values()),
        distinct=len(expected),
    )
