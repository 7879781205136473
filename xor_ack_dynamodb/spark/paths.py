"""Where the job reads and writes, judged before anything is touched (plain Python, no Spark).

Every decision about the user's folders is made here, once:

- which arguments are local paths (``/x``, ``x``, ``file:/x``) and which are
  Hadoop URIs (``s3a://b/x``, ``hdfs://nn/x``); a name like ``http:x`` is a
  local relative path;
- an existing output is replaced only with ``Sink(overwrite=True)``, and only when
  it is a folder this library wrote: it holds our manifest and nothing the manifest
  does not name, at any depth (:func:`judge_output`);
- the local listing of INPUT: hidden names skipped, folders recursed, symbolic
  links followed, what cannot be read reported (:func:`list_local`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from .errors import (
    InputEmpty,
    InputMissing,
    OutputExists,
    OutputNotOurs,
    OutputUnusable,
    RelativePath,
)

#: The marker the job writes into OUTPUT, beside Spark's ``_SUCCESS``.
MANIFEST = "_XOR_ACK_MANIFEST.json"
SUCCESS = "_SUCCESS"
#: Who writes the manifest: this package (the word count's manifests named the command).
PACKAGE = "xor-ack-dynamodb"
_FORMER_TOOL = "xor-ack wordcount"
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: Reasons a file ends ``failed`` at once, without replay (the same bytes fail again).
PERMANENT = ("not-utf8", "unreadable", "broken-symlink", "not-a-regular-file")


def package_version() -> str:
    """This package's installed version (``unknown`` when it runs from a plain checkout)."""
    from importlib import metadata

    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"


def is_remote(path: str) -> bool:
    """A Hadoop URI (``s3a://``, ``hdfs://``, ...), not a path on this machine."""
    return bool(_REMOTE.match(path)) and not path.lower().startswith("file:")


def local_path(path: str) -> str:
    """The absolute local path of a local argument (``file:/x`` and ``file:///x`` included)."""
    if path.startswith("file://"):
        path = path[len("file://") :]
    elif path.startswith("file:/"):
        path = path[len("file:") :]
    return os.path.abspath(path)


def qualified(path: str) -> str:
    """The form the job passes to Hadoop: ``file:/abs/path`` for a local one."""
    return (path.rstrip("/") or "/") if is_remote(path) else "file:" + local_path(path)


def is_relative(path: str) -> bool:
    """A local path that names no root (``out``, ``./x``, ``file:x``)."""
    if is_remote(path):
        return False
    bare = path[len("file:") :] if path.startswith("file:") else path
    return not bare.startswith("/")


def server_path(path: str, what: str) -> str:
    """``path`` as sent to a Spark Connect server: absolute, or refused (:class:`RelativePath`).

    The server would resolve a relative path in its own working directory, which is
    not the client's: the client refuses it before anything is sent.
    """
    if is_relative(path):
        raise RelativePath(
            f"{what} {path!r} is relative: over Spark Connect the server would resolve it in "
            "its own working directory, not this client's; give an absolute path "
            "(/data/out, file:/data/out) or a URI (s3a://bucket/out, hdfs://nn/out)"
        )
    return qualified(path)


def printable(path: str) -> str:
    """``path`` for a terminal or JSON: bytes that are not UTF-8 shown as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# -- OUTPUT -----------------------------------------------------------------------------


class OutputAction(Enum):
    """What the commit does with OUTPUT."""

    CREATE = "create"  # absent: the staged folder is renamed to it
    REPLACE_EMPTY = "replace-empty"  # an empty folder: removed (non-recursively), then renamed
    REPLACE_OURS = "replace-ours"  # a folder this tool wrote: moved away, then replaced


@dataclass(frozen=True)
class Listing:
    """What is at OUTPUT: a folder (its entry names, our manifest's text if any) or a file.

    ``tree`` (when asked for): every entry under the folder, at any depth, as a path
    relative to it, a folder's ending in ``/`` (``j=1/``, ``j=1/part-0.parquet``).
    """

    is_dir: bool
    names: tuple[str, ...] = ()
    manifest: str | None = None
    tree: tuple[str, ...] = ()


#: The manifest's ``format`` from which ``files`` names every entry at any depth (a tree);
#: before, only the top-level ones (a folder's contents cannot be told apart).
TREE_FORMAT = 3


def _crc(entry: str) -> str:
    folder, _, name = entry.rpartition("/")  # Hadoop's local file system writes a checksum
    return f"{folder}/.{name}.crc" if folder else f".{name}.crc"  # file beside each file


def judge_output(output: str, listing: Listing | None, overwrite: bool) -> OutputAction:
    """Whether ``output`` may become the new output; raises a :class:`Refused` error if not."""
    if listing is None:
        return OutputAction.CREATE
    if not listing.is_dir:
        raise OutputExists(
            f"output {output} is a file: give the sink a folder that does not exist",
            output,
            is_file=True,
        )
    if not listing.names:
        return OutputAction.REPLACE_EMPTY
    if not overwrite:
        raise OutputExists(
            f"output {output} exists and is not empty: choose another folder, or pass "
            "Sink(overwrite=True) to replace a folder that this library wrote before",
            output,
        )
    files = manifest_files(listing.manifest)
    if files is None:
        raise OutputNotOurs(
            f"output {output} was not written by {PACKAGE} (no valid {MANIFEST}), so "
            "Sink(overwrite=True) does not replace it: choose another folder",
            output,
        )
    allowed = {*files, MANIFEST}
    allowed |= {_crc(name) for name in list(allowed)}
    if not is_tree(listing.manifest):  # names its top-level entries only
        inside = [entry for entry in listing.tree if "/" in entry.rstrip("/")]
        if inside:
            raise OutputNotOurs(
                f"output {output} was written by an earlier version of {PACKAGE}, whose "
                f"{MANIFEST} names only its top-level entries, so it cannot tell whether "
                f"the {len(inside)} entries inside its folders ({shown(inside)}) are its "
                "own, and Sink(overwrite=True) does not replace it: check them and remove "
                "the folder yourself, or choose another folder",
                output,
                tuple(inside),
            )
    extra = sorted(set(listing.tree or listing.names) - allowed)
    if extra:
        raise OutputNotOurs(
            f"output {output} holds {len(extra)} entries {PACKAGE} did not write "
            f"({shown(extra)}), so Sink(overwrite=True) does not replace it: move them away "
            "or choose another folder",
            output,
            tuple(extra),
        )
    return OutputAction.REPLACE_OURS


def shown(names: list[str], most: int = 3) -> str:
    """The first ``most`` names, quoted, and how many more."""
    first = ", ".join(repr(printable(name)) for name in names[:most])
    return first + (f" and {len(names) - most} more" if len(names) > most else "")


def manifest_files(text: str | None) -> list[str] | None:
    """The entries a manifest names (None: no manifest of this library)."""
    data = manifest(text)
    if data is None:
        return None
    files = data.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return files


def is_tree(text: str | None) -> bool:
    """A manifest whose ``files`` name every entry at any depth (``TREE_FORMAT``)."""
    data = manifest(text) or {}
    version = data.get("format")
    return isinstance(version, int) and version >= TREE_FORMAT


def manifest(text: str | None) -> dict[str, Any] | None:
    """A manifest this library (or the word count before it) wrote, parsed; else None."""
    if text is None:
        return None
    try:
        data: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if data.get("package") != PACKAGE and data.get("tool") != _FORMER_TOOL:
        return None
    return data


def manifest_text(
    run_id: str,
    input_: str,
    names: Iterable[str],
    *,
    complete: bool = True,
    inputs: int | None = None,
    acked: int | None = None,
) -> str:
    """The manifest naming every entry the job wrote into OUTPUT (itself included):
    ``names``, the output's :attr:`Listing.tree` (relative paths, folders ending in ``/``).

    ``complete``: every input acked (a partial output says ``false``, and has no
    ``_SUCCESS``); ``inputs``/``acked``: how many there were, and how many are in it.
    """
    files = sorted({*names, MANIFEST})
    body: dict[str, Any] = {
        "package": PACKAGE,
        "version": package_version(),
        "format": TREE_FORMAT,
        "run_id": run_id,
        "complete": complete,
    }
    if input_:
        body["input"] = input_
    if inputs is not None:
        body["inputs"] = inputs
    if acked is not None:
        body["acked"] = acked
    body["files"] = files
    return json.dumps(body, indent=2, ensure_ascii=True) + "\n"


def local_listing(output: str, tree: bool = False) -> Listing | None:
    """:class:`Listing` of a local OUTPUT (None if nothing is there); ``tree``: with
    every entry at any depth (symbolic links not followed)."""
    path = local_path(output)
    if not os.path.lexists(path):
        return None
    if os.path.islink(path):
        raise OutputUnusable(
            f"output {output} is a symbolic link (to {os.path.realpath(path)}): the output "
            "is put in place by a rename, which would replace the link, not the folder it "
            "points to; give that folder's own path, or another folder",
            output,
        )
    if not os.path.isdir(path):
        return Listing(is_dir=False)
    try:
        names = tuple(sorted(os.listdir(path)))
        entries = _local_tree(path) if tree else ()
    except OSError as exc:
        raise OutputUnusable(
            f"cannot read output {output} ({exc.strerror}: {exc.filename}), so whether it "
            "may be replaced cannot be told: give a folder this user can list, and every "
            "folder in it",
            output,
        ) from exc
    manifest = None
    if MANIFEST in names:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            manifest = Path(path, MANIFEST).read_text(encoding="utf-8")
    return Listing(is_dir=True, names=names, manifest=manifest, tree=entries)


def _local_tree(path: str) -> tuple[str, ...]:
    found: list[str] = []

    def refuse(error: OSError) -> None:
        raise error  # a folder that cannot be listed is not proven ours

    for root, folders, files in os.walk(path, onerror=refuse):
        relative = os.path.relpath(root, path)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        found += [f"{prefix}{name}/" for name in folders if not os.path.islink(f"{root}/{name}")]
        found += [f"{prefix}{name}" for name in files]
        found += [f"{prefix}{name}" for name in folders if os.path.islink(f"{root}/{name}")]
    return tuple(sorted(found))


def staging_path(output: str, run_id: str) -> str:
    """The run's staging folder: a hidden sibling of OUTPUT (a rename away from it)."""
    target = qualified(output)
    parent, _, name = target.rpartition("/")
    return f"{parent}/.{name}.xor-ack-{run_id}"


# -- INPUT ------------------------------------------------------------------------------


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
