"""What a benchmark's JSON results file records of the run's arguments.

A results file is committed: the path it was written to is recorded relative to the
repository (``benchmarks/results/x.json``), and a path outside it by its name only, so
no machine's folders end up in the repository.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent


def recorded_path(path: Path | None) -> str | None:
    """``path`` as a results file records it (None stays None)."""
    if path is None:
        return None
    absolute = path.resolve()
    if absolute.is_relative_to(REPOSITORY):
        return absolute.relative_to(REPOSITORY).as_posix()
    return absolute.name


def recorded_args(args: argparse.Namespace) -> dict[str, Any]:
    """The run's arguments as a results file records them (``--json`` by ``recorded_path``)."""
    return vars(args) | {"json": recorded_path(args.json)}
