"""The few file operations of a commit: list, write a small file, rename, delete.

A local path (``/x``, ``file:/x``) is handled by Python's ``os`` on the driver
(or the Spark Connect client, which must then share the file system with the
server, as on one machine); a Hadoop URI (``s3a://``, ``hdfs://``) through
Hadoop's FileSystem API in the driver's JVM, which only classic Spark exposes.
The rules of what may be replaced are ``paths``'s, unchanged.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from .errors import RemoteFilesUnsupported, SparkTrackingError
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
    """File operations on paths of one kind (local or Hadoop), for one session."""

    def __init__(self, spark: Any, example: str) -> None:
        self.spark = spark
        self.local = not is_remote(example)
        if not self.local and is_connect(spark):
            raise RemoteFilesUnsupported(
                f"{example}: over Spark Connect the library commits local paths only "
                "(the client has no Hadoop FileSystem); run the job on classic Spark "
                "(spark-submit) for s3a://, hdfs:// or gs:// outputs"
            )

    def listing(self, target: str) -> Listing | None:
        if self.local:
            return local_listing(target)
        found: Listing | None = _hadoop().listing(self.spark, target)
        return found

    def write_text(self, target: str, text: str) -> None:
        if not self.local:
            _hadoop().write_text(self.spark, target, text)
            return
        with open(local_path(target), "x", encoding="utf-8") as fh:
            fh.write(text)

    def rename(self, source: str, target: str) -> None:
        if not self.local:
            _hadoop().rename(self.spark, source, target)
            return
        src, dst = local_path(source), local_path(target)
        if os.path.lexists(dst):
            raise SparkTrackingError(f"could not rename {source} to {target}: {target} exists")
        os.rename(src, dst)

    def remove_empty_folder(self, target: str) -> None:
        if not self.local:
            _hadoop().remove_empty_folder(self.spark, target)
            return
        os.rmdir(local_path(target))  # fails unless empty: nothing else is ever removed

    def delete(self, target: str) -> None:
        """Remove ``target`` recursively: only ever a staging folder this run created."""
        if not self.local:
            _hadoop().delete_path(self.spark, target)
            return
        shutil.rmtree(local_path(target), ignore_errors=True)
