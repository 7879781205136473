"""The local listing of INPUT, and reading one file (plain Python, no Spark).

Hidden names skipped (as Hadoop's ``FileInputFormat`` does), folders recursed, symbolic
links followed, and what cannot be read listed with why, so that it ends ``failed``
without being read (:func:`list_local`).  A Hadoop URI is listed by Spark, not here.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from .errors import InputEmpty, InputMissing
from .paths import local_path


@dataclass(frozen=True)
class InputFile:
    """One input: its path (``file:/abs`` or a Hadoop URI), size, and why it cannot be read."""

    path: str
    size: int
    problem: str | None = None


def hidden(name: str) -> bool:
    # Hadoop's FileInputFormat skips these (``_SUCCESS``, ``.crc``, ...): so does the listing.
    return name.startswith(("_", "."))


def list_local(root: str) -> list[InputFile]:
    """Every file under a local ``root``, sorted; raises if there is none to count.

    Folders are recursed, symbolic links followed (a folder reached twice is
    listed once, so a link loop ends), names starting with ``_`` or ``.`` skipped.
    A broken link, a FIFO / socket / device and an unreadable folder are listed
    with their ``problem``: they end ``failed`` without being read.
    """
    top = local_path(root)
    if not os.path.lexists(top):
        raise InputMissing(f"input {root} does not exist: give a folder or file to count")
    if not os.path.exists(top):
        raise InputMissing(f"input {root} is a broken symbolic link: give a folder or file")
    found: list[InputFile] = []
    if not os.path.isdir(top):
        found.append(_entry(top))
    else:
        _walk(top, {os.path.realpath(top)}, found)
    if not found:
        raise InputEmpty(
            f"input {root} holds no file to count (names starting with '_' or '.' are "
            "skipped): nothing to do"
        )
    return sorted(found, key=lambda f: f.path)


def _entry(path: str) -> InputFile:
    where = "file:" + path
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return InputFile(where, 0, "broken-symlink: its target does not exist")
    except OSError as exc:
        return InputFile(where, 0, f"unreadable: {exc.strerror}")
    if stat.S_ISREG(info.st_mode):
        return InputFile(where, info.st_size)
    return InputFile(where, 0, "not-a-regular-file: a FIFO, socket or device is not read")


def _walk(folder: str, seen: set[str], found: list[InputFile]) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        found.append(InputFile("file:" + folder, 0, f"unreadable: folder: {exc.strerror}"))
        return
    for entry in entries:
        if hidden(entry.name):
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=True)
        except OSError:
            is_dir = False
        if is_dir:
            real = os.path.realpath(entry.path)
            if real not in seen:
                seen.add(real)
                _walk(entry.path, seen, found)
        else:
            found.append(_entry(entry.path))


class Unreadable(str):
    """In place of a file's bytes: why it could not be read (an ``OSError``'s text)."""

    __slots__ = ()


def read_local(path: str) -> bytes | Unreadable:
    """The bytes of ``file:/abs`` ``path``, or why they cannot be read."""
    try:
        with open(local_path(path), "rb") as fh:
            return fh.read()
    except OSError as exc:
        return Unreadable(exc.strerror or type(exc).__name__)
