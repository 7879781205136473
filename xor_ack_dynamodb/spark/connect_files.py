"""A commit's file steps over Spark Connect, done by the server: never on the client's disk.

A Spark Connect client has no Hadoop FileSystem and may not see the output at
all.  The server does: the client ships a small Java function
(``java/XorAckFiles.java``, compiled into ``java/xor-ack-files.jar``) as a session
artifact (``spark.addArtifacts``), registers it (``spark.udf.registerJavaFunction``)
and calls it on a one-row DataFrame.  The function works through Hadoop's
FileSystem with the session's Hadoop configuration, so any path Spark can write
is listed, written, renamed and deleted the way Spark's own committer does it.
Every operation is safe to run twice (a retried task): a rename already done, a
file already written with the same text, a folder already gone are fine.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from .errors import RemoteFilesUnsupported, SparkTrackingError
from .paths import MANIFEST, Listing, link_refused

#: The helper, built from ``XorAckFiles.java`` by ``make spark-jar`` (package data).
JAR = Path(__file__).parent / "java" / "xor-ack-files.jar"
SOURCE = JAR.with_name("XorAckFiles.java")
CLASS = "org.xorack.spark.XorAckFiles"
FUNCTION = "xor_ack_files"
#: What separates the parts of the helper's answers (no file name holds it).
SEP = "\0"
#: How the helper's answer begins for a local path that is a symbolic link (then its end).
LINK = "link" + SEP

_LOCK = threading.Lock()
#: Sessions (``session_id``) that have the helper registered.
_READY: set[str] = set()
#: The Java error in a failed call's message: ``... failed due to: java.io.X: why. SQLSTATE``.
_CAUSE = re.compile(r"failed due to: (.*?)(?:\. SQLSTATE|\n|$)", re.S)


def _session(spark: Any) -> str:
    return str(getattr(spark, "session_id", id(spark)))


def forget(spark: Any) -> None:
    """``spark``'s server no longer has the helper: the next :func:`register` ships it."""
    with _LOCK:
        _READY.discard(_session(spark))


def register(spark: Any) -> None:
    """Ship the helper to ``spark``'s server and register it, once per session."""
    from pyspark.sql.types import StringType

    session = _session(spark)
    with _LOCK:
        if session in _READY:
            return
        try:
            spark.addArtifacts(str(JAR))
        except Exception as exc:
            if "already exists" not in str(exc).lower():
                raise RemoteFilesUnsupported(
                    "the Spark Connect server did not accept the library's file helper "
                    f"({JAR.name}, a session artifact): {_cause(exc)}; the commit's file steps "
                    "(listing, manifest, rename) must run on the server, so allow session "
                    "artifacts there (spark.connect.* settings) or run the job on classic Spark"
                ) from exc
        spark.udf.registerJavaFunction(FUNCTION, CLASS, StringType())
        _READY.add(session)


class ServerFiles:
    """File operations on the Spark Connect server of ``spark`` (any path Spark can write)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        register(spark)

    def _call(self, op: str, target: str, arg: str = "") -> str:
        from pyspark.sql import functions as F

        ddl = "op string, path string, arg string"
        frame = self.spark.createDataFrame([(op, target, arg)], ddl)
        asked = frame.select(F.call_udf(FUNCTION, "op", "path", "arg").alias("r"))
        try:
            try:
                return str(asked.collect()[0]["r"])
            except Exception as exc:
                if FUNCTION not in str(exc) or "UNRESOLVED_ROUTINE" not in str(exc):
                    raise
            # The server lost the session's function (restarted under a session id the
            # client pins, say): registered again, and asked once more.
            forget(self.spark)
            register(self.spark)
            return str(asked.collect()[0]["r"])
        except SparkTrackingError:  # the helper refused again: said as register says it
            raise
        except Exception as exc:
            raise SparkTrackingError(
                f"{op} {target} on the Spark Connect server failed: {_cause(exc)}"
            ) from exc

    def listing(self, target: str, tree: bool = False) -> Listing | None:
        answer = self._call("tree" if tree else "list", target, MANIFEST)
        if answer == "absent":
            return None
        if answer == "file":
            return Listing(is_dir=False)
        if answer.startswith(LINK):  # a local path, a link on the server's disk
            raise link_refused(target, answer[len(LINK) :])
        names: list[str] = []
        entries: list[str] = []
        text: str | None = None
        for part in answer.split(SEP)[1:]:
            if part.startswith("n:"):
                names.append(part[2:])
            elif part.startswith("r:"):
                entries.append(part[2:])
            elif part.startswith("t:"):
                text = part[2:]
        return Listing(is_dir=True, names=tuple(names), manifest=text, tree=tuple(sorted(entries)))

    def followed(self, target: str) -> str:
        """``target``, or the folder a symbolic link there leads to (on the server's disk)."""
        answer = self._call("link", target, "")
        return f"file:{answer[len(LINK) :]}" if answer.startswith(LINK) else target

    def write_text(self, target: str, text: str) -> None:
        self._call("write", target, text)

    def rename(self, source: str, target: str) -> None:
        self._call("rename", source, target)

    def fill(self, source: str, target: str, names: list[str]) -> None:
        self._call("fill", source, SEP.join([target, *names]))

    def delete(self, target: str) -> None:
        self._call("delete", target)


def _cause(exc: BaseException) -> str:
    text = str(exc)
    found = _CAUSE.search(text)
    line = found.group(1) if found else (text.strip().splitlines() or [type(exc).__name__])[0]
    return line.strip()[:300]
