"""The few file operations of a commit: list, write a small file, rename, delete.

Each runs where Spark runs, never on a Spark Connect client's own disk:

- classic Spark (the driver is Spark's): a local path (``/x``, ``file:/x``) by
  Python's ``os`` in the driver, a Hadoop URI (``s3a://``, ``hdfs://``) through
  Hadoop's FileSystem API in the driver's JVM (``hadoop``);
- Spark Connect: every path by the server, through Hadoop's FileSystem with the
  session's Hadoop configuration (``connect_files``: a small Java function the
  client ships to the server as a session artifact).  The client may not see the
  output at all (another machine, another user).

The rules of what may be replaced are ``paths``'s, unchanged.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from typing import Any

from .errors import SparkTrackingError
from .paths import Listing, is_remote, local_listing, local_path


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM on this side)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _hadoop() -> Any:
    # Imported only for a Hadoop URI: it needs classic PySpark (the JVM), which the
    # thin Spark Connect client (pyspark-client) does not ship.
    from . import hadoop

    return hadoop


class Files:
    """File operations for one session: each path to where that session's Spark runs."""

    def __init__(self, spark: Any, example: str = "") -> None:
        self.spark = spark
        self.connect = is_connect(spark)
        self._server: Any = None

    def _via(self, target: str) -> str:
        if self.connect:
            return "server"
        return "jvm" if is_remote(target) else "local"

    @property
    def server(self) -> Any:
        """The Spark Connect server's file helper (made on first use)."""
        if self._server is None:
            from .connect_files import ServerFiles

            self._server = ServerFiles(self.spark)
        return self._server

    def listing(self, target: str, tree: bool = False) -> Listing | None:
        """What is at ``target``; ``tree``: with every entry at any depth (``Listing.tree``)."""
        via = self._via(target)
        if via == "server":
            found: Listing | None = self.server.listing(target, tree)
            return found
        if via == "jvm":
            found = _hadoop().listing(self.spark, target, tree)
            return found
        return local_listing(target, tree)

    def followed(self, folder: str) -> str:
        """``folder``, or the folder a local symbolic link there points to (a stream's
        output: its batches are renamed inside it, never over it)."""
        via = self._via(folder)
        if via == "server":
            followed: str = self.server.followed(folder)
            return followed
        if via == "local" and os.path.islink(local_path(folder)):
            return os.path.realpath(local_path(folder))
        return folder

    def names(self, folder: str) -> tuple[str, ...] | None:
        """The entries of ``folder``, through a link to it too (None: no folder to list)."""
        if self._via(folder) == "local":
            try:
                return tuple(sorted(os.listdir(local_path(folder))))
            except OSError:
                return None
        try:
            found = self.listing(self.followed(folder))
        except SparkTrackingError:
            return None
        return found.names if found is not None and found.is_dir else None

    def write_text(self, target: str, text: str) -> None:
        via = self._via(target)
        if via == "server":
            self.server.write_text(target, text)
        elif via == "jvm":
            _hadoop().write_text(self.spark, target, text)
        else:
            with open(local_path(target), "x", encoding="utf-8") as fh:
                fh.write(text)

    def probe_write(self, target: str) -> None:
        """Write an empty file at ``target`` and remove it: raises if that folder refuses
        writes.  On a local disk, in the nearest folder of ``target``'s that exists (the
        run makes the rest), so that nothing is made before the run starts."""
        if self._via(target) == "local":
            folder = os.path.dirname(local_path(target))
            while not os.path.lexists(folder) and os.path.dirname(folder) != folder:
                folder = os.path.dirname(folder)
            target = os.path.join(folder, os.path.basename(local_path(target)))
        self.delete(target)  # a run's own scratch name: left by one stopped mid-probe
        self.write_text(target, "")
        self.delete(target)

    def rename(self, source: str, target: str) -> None:
        via = self._via(target)
        if via == "server":
            self.server.rename(source, target)
            return
        if via == "jvm":
            _hadoop().rename(self.spark, source, target)
            return
        src, dst = local_path(source), local_path(target)
        if os.path.lexists(dst):
            raise SparkTrackingError(f"could not rename {source} to {target}: {target} exists")
        os.rename(src, dst)

    def fill(self, source: str, target: str, names: list[str]) -> None:
        """Move the entries ``names`` of the folder ``source`` into the folder ``target``, in
        that order; on a failure those moved go back, and it raises."""
        if self._via(target) == "server":
            self.server.fill(source, target, names)
            return
        moved: list[str] = []
        try:
            for name in names:
                self.rename(f"{source}/{name}", f"{target}/{name}")
                moved.append(name)
        except BaseException:
            for name in reversed(moved):
                with contextlib.suppress(Exception):  # the error to raise is the first one
                    self.rename(f"{target}/{name}", f"{source}/{name}")
            raise

    def delete(self, target: str) -> None:
        """Remove ``target`` recursively: only ever what this run created."""
        via = self._via(target)
        if via == "server":
            self.server.delete(target)
        elif via == "jvm":
            _hadoop().delete_path(self.spark, target)
        elif os.path.isdir(local_path(target)):
            shutil.rmtree(local_path(target), ignore_errors=True)
        else:
            # nothing there, or a file where a folder on its path was expected: nothing of
            # this run's to remove (a cleanup must not hide the run's own error)
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                os.unlink(local_path(target))
