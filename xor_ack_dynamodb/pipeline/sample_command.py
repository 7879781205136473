"""``xor-ack wordcount-sample``: a deterministic sample corpus for the word count."""

from __future__ import annotations

from pathlib import Path

import click

from ..cli.errors import RefusedUsage, UserError, explain
from .corpus import generate
from .errors import Refused
from .options import shown


@click.command("wordcount-sample")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@shown("--files", click.IntRange(min=0), 100)
@shown("--lines", click.IntRange(min=0), 40)
@shown("--words-per-line", click.IntRange(min=1, max=100_000), 12)
@shown("--seed", int, 0)
@shown(
    "--invalid",
    click.IntRange(min=0),
    0,
    "Also write this many files that are not UTF-8 (they end failed).",
)
def wordcount_sample(
    directory: Path, files: int, lines: int, words_per_line: int, seed: int, invalid: int
) -> None:
    """Write a deterministic sample corpus for `xor-ack wordcount` under DIRECTORY.

    DIRECTORY must be new or empty; if it holds the very sample these options make
    (written before), it is used as it is.  Anything else is refused (exit 2) and
    nothing is written, as for a DIRECTORY that cannot be created.
    """
    try:
        info = generate(
            directory,
            files=files,
            lines=lines,
            words_per_line=words_per_line,
            seed=seed,
            invalid=invalid,
        )
    except Refused as exc:
        raise RefusedUsage(explain(exc) or str(exc)) from exc
    except OSError as exc:  # while writing (a full disk, ...): the folder holds a part
        raise UserError(
            f"writing the sample under {directory} failed ({exc.strerror or exc}): make room, "
            "or choose another DIRECTORY"
        ) from exc
    click.echo(
        f"{info.files} files ({info.words:,} words) under {info.root}"
        + (f", plus {info.invalid} non-UTF-8 files" if info.invalid else "")
    )
