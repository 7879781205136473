"""The launcher that binds DynamoDB Local to one host: compiled once, then kept.

``LoopbackDynamoDBLocal.java`` runs in Java's single-file source mode when nothing else
is at hand, and then ``java`` compiles it at every start: measured here, 4.3-5.9
CPU-seconds and 2.4-8 s to a listening server, against 3.0-3.1 CPU-seconds and 1.8-2.0 s
from a compiled class.  So the first start compiles it with the ``javac`` beside
``java`` (``--release 17``: the class runs on any Java 17 or later) into the cache
folder, in a folder named after the source's hash, made under a temporary name and
renamed into place (two starts at once: one wins, both use it).  No ``javac``, or a
compile that fails: the source mode, as before; never an error of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .install import cache_dir

#: Starts DynamoDB Local bound to one host; it is package data beside the package's modules.
LAUNCHER = Path(__file__).parent / "LoopbackDynamoDBLocal.java"
#: The launcher's class, as compiled.
MAIN_CLASS = LAUNCHER.stem


def compiled_launcher(jar: Path, root: Path | None = None) -> Path | None:
    """The folder of the launcher's compiled class (compiled now if need be), or None."""
    source = LAUNCHER.read_bytes()
    folder = (root or cache_dir()) / f"launcher-{hashlib.sha256(source).hexdigest()[:16]}"
    if (folder / f"{MAIN_CLASS}.class").is_file():
        return folder
    javac = _javac()
    if javac is None:
        return None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".launcher-", dir=folder.parent))
    except OSError:
        return None
    try:
        done = subprocess.run(
            [javac, "--release", "17", "-cp", str(jar), "-d", str(work), str(LAUNCHER)],
            capture_output=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0 or not (work / f"{MAIN_CLASS}.class").is_file():
            return None
        with contextlib.suppress(OSError):  # another start renamed its copy first
            work.rename(folder)
        return folder if (folder / f"{MAIN_CLASS}.class").is_file() else None
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _javac() -> str | None:
    """The ``javac`` of the ``java`` on PATH (its JDK), else the one on PATH."""
    java = shutil.which("java")
    if java is not None:
        beside = Path(os.path.realpath(java)).parent / "javac"
        if os.access(beside, os.X_OK):
            return str(beside)
    return shutil.which("javac")


def launcher_arguments(jar: Path) -> list[str]:
    """``-cp CLASSPATH MAIN``: the compiled class when it can be had, else the source file."""
    classes = compiled_launcher(jar)
    if classes is None:
        return ["-cp", str(jar), str(LAUNCHER)]
    return ["-cp", f"{jar}{os.pathsep}{classes}", MAIN_CLASS]
