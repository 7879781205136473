"""Where the job reads and writes, judged before anything is touched (plain Python, no Spark).

Every decision about the user's folders is made here, once:

- which arguments are local paths (``/x``, ``x``, ``file:/x``) and which are
  Hadoop URIs (``s3a://b/x``, ``hdfs://nn/x``); a name like ``http:x`` is a
  local relative path;
- an existing output is replaced only with ``Sink(overwrite=True)``, and only when
  it is a folder this library wrote: it holds our manifest and nothing the manifest
  does not name, at any depth (:func:`judge_output`).

The local listing of INPUT is ``input_listing``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from .errors import (
    InvalidArgument,
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
    """The absolute local path of a local argument (``file:/x``, ``file:///x`` and
    ``file://localhost/x`` included; ``InvalidArgument`` for another host's)."""
    if path.startswith("file://"):
        host, slash, rest = path[len("file://") :].partition("/")
        if host and host.lower() != "localhost":
            raise InvalidArgument(
                f"{path!r} names a file of the host {host!r}: give a path of this machine"
                " (file:/x, file:///x, /x) or a Hadoop URI (hdfs://..., s3a://...)"
            )
        path = slash + rest
    elif path.startswith("file:/"):
        path = path[len("file:") :]
    path = os.path.abspath(path)
    # POSIX keeps two leading slashes ("//tmp"): "file:" + it would read as a URI's host.
    return "/" + path.lstrip("/") if path.startswith("//") else path


def real_path(path: str) -> str:
    """A path to compare with another: a local one absolute with its links resolved, a
    remote one without a trailing slash."""
    return path.rstrip("/") if is_remote(path) else os.path.realpath(local_path(path))


def is_inside(inner: str, outer: str) -> bool:
    """Is ``inner`` the folder ``outer`` or in it (both as :func:`real_path` gives them)?"""
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def qualified(path: str) -> str:
    """The form the job passes to Hadoop: ``file:/abs/path`` for a local one."""
    return (path.rstrip("/") or "/") if is_remote(path) else "file:" + local_path(path)


#: The characters Hadoop's glob gives a meaning to, in a path Spark reads
GLOB_CHARACTERS = frozenset("[]{}*?\\")


def literal(path: str) -> str:
    """``path`` for Spark to read as it is: a folder named ``counts[2024]`` is no glob
    (given as it is, Spark finds no path, after every chain of a run was written)."""
    return "".join(f"\\{c}" if c in GLOB_CHARACTERS else c for c in path)


def is_relative(path: str) -> bool:
    """A local path that names no root (``out``, ``./x``, ``file:x``)."""
    if is_remote(path):
        return False
    if path.startswith("file://"):
        return False  # file://HOST/x: absolute (local_path refuses another host)
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


def path_key(path: str) -> str:
    """A local file's input key: ``printable``, with each ``\\`` of the name doubled, so
    that no two names share a key (a name with byte 0xE9 is ``caf\\xe9``, one spelled
    with a backslash ``caf\\\\xe9``)."""
    return printable(path.replace("\\", "\\\\"))


# -- OUTPUT -----------------------------------------------------------------------------


class OutputAction(Enum):
    """What the commit does with OUTPUT."""

    CREATE = "create"  # absent: the staged folder is renamed to it
    REPLACE_EMPTY = "replace-empty"  # an empty folder: the staged entries moved into it
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


def manifest_inputs(text: str | None) -> int | None:
    """How many inputs the output a manifest describes had (None: it does not say)."""
    data = manifest(text)
    inputs = None if data is None else data.get("inputs")
    return inputs if isinstance(inputs, int) and not isinstance(inputs, bool) else None


def missing_entries(listing: Listing | None) -> list[str] | None:
    """What a folder the library committed lacks of what its manifest names, at any depth
    (``listing`` with its tree); None: no manifest of this library at all.  An empty list
    is a whole folder.  A folder renamed into place is whole where the rename is atomic
    (a local disk, HDFS); on a store that copies object by object (S3A, GCS), a rename
    interrupted half-way leaves some of it, or its manifest, out."""
    if listing is None or not listing.is_dir:
        return None
    files = manifest_files(listing.manifest)
    if files is None:
        return None
    return sorted(set(files) - set(listing.tree or listing.names))


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


def link_refused(output: str, to: str) -> OutputUnusable:
    """The refusal of an OUTPUT that is a symbolic link (to the folder ``to``)."""
    return OutputUnusable(
        f"output {output} is a symbolic link (to {to}): the output is put in place by a "
        "rename, which would replace the link, not the folder it points to; give that "
        "folder's own path, or another folder",
        output,
    )


def local_listing(output: str, tree: bool = False) -> Listing | None:
    """:class:`Listing` of a local OUTPUT (None if nothing is there); ``tree``: with
    every entry at any depth (symbolic links not followed)."""
    path = local_path(output)
    if not os.path.lexists(path):
        return None
    if os.path.islink(path):
        raise link_refused(output, os.path.realpath(path))
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


#: What names a run's staging folder after OUTPUT's name: ``.NAME.xor-ack-RUN_ID``.
STAGING_MARK = "xor-ack-"


def name_max(folder: str) -> int:
    """The longest name a file in ``folder`` may have, in bytes (255 where not told)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def staging_too_long(output: str, run_id: str) -> int | None:
    """The most bytes a name may have beside a local ``output`` when the run's staging
    folders (``.NAME.xor-ack-RUN`` and its ``-check``) would not fit them, else None."""
    if is_remote(output):
        return None
    parent, _, name = local_path(output).rstrip("/").rpartition("/")
    longest = f".{name}.{STAGING_MARK}{run_id}-check"
    limit = name_max(parent or "/")
    return limit if len(os.fsencode(longest)) > limit else None


def staging_path(output: str, run_id: str) -> str:
    """The run's staging folder: a hidden sibling of OUTPUT (a rename away from it)."""
    target = qualified(output)
    parent, _, name = target.rpartition("/")
    return f"{parent}/.{name}.{STAGING_MARK}{run_id}"
