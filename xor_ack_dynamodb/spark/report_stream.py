"""The inputs' endings of a run as JSON Lines: written as each input ends, read back on demand.

A run of N inputs keeps O(inputs in flight) on the driver: an input's entry
(``InputResult``: key, status, attempts, the history of its attempts) lives in
memory while the input is in its page's rounds, and is written out as one JSON
line when it ends (acked, failed for good, counted, or rejected before any
round); only counters stay.  The lines go to the file the caller names
(``track(report=PATH)``), else to an anonymous temporary file (removed when the
report is dropped).  The last line of a named file is the run's summary,
``{"summary": {...}}`` (the report's counters, rounds, writes, seconds).  A named
file is written as a hidden temporary file beside it (made at the first line, so a
run refused before any input ended makes none), renamed onto ``PATH`` with the
summary (written to disk first, so that a machine lost just after leaves the whole
file, not an empty one): a run that raises before then leaves a former ``PATH`` as it
was, and its temporary file is removed when the report is dropped.  The temporary
file is locked (``flock``) while its run writes; one that a killed run left behind
(unlocked, older than a minute) is removed by the next run writing the same report.

Reading back (``TrackedReport.inputs``, ``.failed``, ``endings()``) streams the
lines from the start, one at a time; ``.inputs`` builds the whole list, as the
report always did (O(N), only when asked).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import IO, Any

#: The key of a report file's last line, the run's summary.
SUMMARY = "summary"


#: How old an unlocked temporary report file must be to be taken as abandoned: a writer
#: locks its file microseconds after making it, never a minute.
ABANDONED_AFTER = 60.0


def partial_name(name: str) -> str:
    """A new temporary file's name for report ``name``: ``.NAME.<12 hex>.partial``."""
    return f".{name}.{uuid.uuid4().hex[:12]}.partial"


def is_partial_of(name: str, entry: str) -> bool:
    """Whether ``entry`` is named as a temporary file of report ``name`` (``partial_name``)."""
    return re.fullmatch(rf"\.{re.escape(name)}\.[0-9a-f]{{12}}\.partial", entry) is not None


def unlocked_since(path: str) -> float | None:
    """The mtime of the temporary file ``path`` if no process holds its lock (its writer is
    gone), else None; None too for a file that cannot be opened (or is a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return os.fstat(fd).st_mtime
    except OSError:  # held: a live run's
        return None
    finally:
        os.close(fd)


def _remove_abandoned(folder: str, name: str) -> None:
    """Remove the temporary files of runs that wrote report ``name`` and were killed (no
    process holds their lock); only files named as ``partial_name`` names them."""
    with contextlib.suppress(OSError):
        for entry in [e for e in os.listdir(folder) if is_partial_of(name, e)]:
            path = os.path.join(folder, entry)
            since = unlocked_since(path)
            if since is not None and time.time() - since > ABANDONED_AFTER:
                with contextlib.suppress(OSError):
                    os.unlink(path)


class Endings:
    """Each ending input as one JSON line in a file; its status counted.

    ``path``: the file to write (replaced by a rename when closed); None: a temporary file.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self._opened: IO[str] | None = None
        #: The hidden file beside ``path`` the lines go to until :meth:`close` renames it.
        self._partial: str | None = None
        self._lock = threading.Lock()
        self.statuses: Counter[str] = Counter()
        self.replayed = 0  # inputs that ended after more than one attempt
        self.closed = False

    @property
    def _file(self) -> IO[str]:
        """The file of the lines, made on first use (nothing is made before an input ends)."""
        if self._opened is None:
            # Open as long as the report lives (closed when it is dropped): no ``with``.
            if self.path is None:
                self._opened = tempfile.TemporaryFile(  # noqa: SIM115
                    "w+", encoding="utf-8", prefix="xor-ack-report-"
                )
            else:
                folder, name = os.path.split(os.path.abspath(self.path))
                partial = os.path.join(folder, partial_name(name))
                flags = os.O_RDWR | os.O_CREAT | os.O_EXCL  # the umask's mode, as open() gives
                self._opened = os.fdopen(os.open(partial, flags, 0o666), "w+", encoding="utf-8")
                # Locked while this run writes it: a run that finds it unlocked knows its
                # writer is gone (killed before it could rename or remove it).
                fcntl.flock(self._opened.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._partial = partial
                _remove_abandoned(folder, name)
        return self._opened

    def add(self, entry: Any) -> None:
        """Write ``entry`` (an ``InputResult``, ended) as the next line, and count it."""
        line = {
            "key": entry.key,
            "status": entry.status,
            "attempts": entry.attempts,
            "history": list(entry.history),
        }
        text = json.dumps(line, ensure_ascii=True) + "\n"
        with self._lock:
            self._file.write(text)
            self.statuses[entry.status] += 1
            self.replayed += entry.attempts > 1

    def extend(self, entries: Iterable[Any]) -> None:
        for entry in entries:
            self.add(entry)

    @property
    def count(self) -> int:
        """Inputs ended so far."""
        return sum(self.statuses.values())

    def lines(self) -> Iterator[dict[str, Any]]:
        """Each ending written so far, as its JSON object, from the first (summary left out)."""
        position = 0
        while True:
            with self._lock:
                self._file.flush()
                end = self._file.tell()
                self._file.seek(position)
                chunk = self._chunk() if position < end else []
                position = self._file.tell()
                self._file.seek(end)
            if not chunk:
                return
            for text in chunk:
                data = json.loads(text)
                if SUMMARY not in data:
                    yield data

    def _chunk(self, budget: int = 1 << 20) -> list[str]:
        """The next lines, about ``budget`` characters of them, by ``readline``: a text
        file's ``readlines(hint)`` reads by iterating, after which ``tell()`` refuses."""
        lines: list[str] = []
        while budget > 0 and (text := self._file.readline()):
            lines.append(text)
            budget -= len(text)
        return lines

    def close(self, summary: dict[str, Any] | None = None) -> None:
        """Write the summary line (a named file) and flush; the lines stay readable."""
        with self._lock:
            if not self.closed and summary is not None and self.path is not None:
                self._file.write(json.dumps({SUMMARY: summary}, ensure_ascii=True) + "\n")
            if self._opened is not None or self.path is not None:
                self._file.flush()
            if self._partial is not None and self.path is not None:
                os.fsync(self._file.fileno())  # on disk whole before it takes the name
                os.replace(self._partial, self.path)  # the lines stay readable (same file)
                self._partial = None
            self.closed = True

    def abandon(self) -> None:
        """The run did not end: its lines are dropped, a former ``path`` stays as it was."""
        with self._lock:
            if self._partial is not None:
                partial, self._partial = self._partial, None
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(partial)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            if self._opened is not None:
                self._opened.close()
            self.abandon()


def read_report(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A report file's endings and its summary ({} if the run did not finish)."""
    endings: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    with open(path, encoding="utf-8") as fh:
        for text in fh:
            data = json.loads(text)
            if SUMMARY in data:
                summary = data[SUMMARY]
            else:
                endings.append(data)
    return endings, summary
