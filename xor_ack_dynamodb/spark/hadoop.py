"""Files through Spark's own Hadoop FileSystem (classic Spark: the JVM behind the session).

Listing, reading, writing, renaming and deleting a path any Hadoop FileSystem
serves (``file:``, ``hdfs:``, ``s3a:``...), for the commit of a tracked round.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from .errors import SparkTrackingError
from .paths import MANIFEST, Listing


def _fs(spark: SparkSession, target: str) -> tuple[Any, Any]:
    jvm: Any = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(target)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


def delete_path(spark: SparkSession, target: str) -> None:
    """Remove ``target`` (recursively) if it exists: only ever a path the job created."""
    fs, path = _fs(spark, target)
    if fs.exists(path):
        fs.delete(path, True)


def listing(spark: SparkSession, target: str, tree: bool = False) -> Listing | None:
    """What is at ``target`` (:class:`.paths.Listing`), None if nothing."""
    fs, path = _fs(spark, target)
    if not fs.exists(path):
        return None
    if not fs.getFileStatus(path).isDirectory():
        return Listing(is_dir=False)
    names = tuple(sorted(status.getPath().getName() for status in fs.listStatus(path)))
    manifest = read_text(spark, f"{target.rstrip('/')}/{MANIFEST}") if MANIFEST in names else None
    found = tuple(sorted(_tree(fs, path, ""))) if tree else ()
    return Listing(is_dir=True, names=names, manifest=manifest, tree=found)


def _tree(fs: Any, path: Any, prefix: str) -> list[str]:
    """Every entry under ``path``, relative, a folder's ending in ``/``."""
    found: list[str] = []
    for status in fs.listStatus(path):
        name = prefix + status.getPath().getName()
        if status.isDirectory():
            found.append(name + "/")
            found += _tree(fs, status.getPath(), name + "/")
        else:
            found.append(name)
    return found


def read_text(spark: SparkSession, target: str) -> str | None:
    fs, path = _fs(spark, target)
    jvm: Any = spark._jvm
    stream = fs.open(path)
    try:
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return None


def write_text(spark: SparkSession, target: str, text: str) -> None:
    """Create ``target`` (never over an existing file) holding ``text``."""
    fs, path = _fs(spark, target)
    stream = fs.create(path, False)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def rename(spark: SparkSession, source: str, target: str) -> None:
    """Rename ``source`` to ``target`` (which must not exist)."""
    fs, src = _fs(spark, source)
    _, dst = _fs(spark, target)
    if fs.exists(dst) or not fs.rename(src, dst):
        raise SparkTrackingError(f"could not rename {source} to {target}")
