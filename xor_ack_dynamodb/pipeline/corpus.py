"""A sample corpus for the demo, the tests and the benchmark: deterministic given a seed.

``files`` text files of ``lines`` lines each, under ``part-NN/`` folders (so the
listing is recursive), words drawn from a Zipf-like vocabulary of made-up
words plus a few non-ASCII ones, some capitalised, with punctuation.  The same
arguments always write the same bytes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from .errors import SampleExists, SampleUnwritable

_ONSETS = [
    "",
    "b",
    "br",
    "c",
    "ch",
    "d",
    "f",
    "g",
    "gr",
    "k",
    "l",
    "m",
    "n",
    "p",
    "pl",
    "r",
    "s",
    "sh",
    "st",
    "t",
    "th",
    "tr",
    "v",
    "w",
    "z",
]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "y"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "nd", "st", "ck"]
#: Non-ASCII words (some uppercase, to exercise ``lower()``: "STRASSE"-like forms stay apart).
UNICODE_WORDS = [
    "café",
    "naïve",
    "straße",
    "Über",
    "smörgåsbord",
    "日本語",
    "κόσμος",
    "привет",
    "ÉCOLE",
    "façade",
    "jalapeño",
    "Ørsted",
]
_PUNCT = ["", "", "", "", ",", ".", ";", "!", "?", ":"]
FILES_PER_FOLDER = 50
#: What a sample folder holds beside its files (hidden: the word count skips it).
SAMPLE_MARKER = ".xor-ack-sample.json"


@dataclass(frozen=True)
class CorpusInfo:
    root: Path
    files: int
    lines: int
    words: int
    invalid: int


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """``size`` distinct made-up words, then the non-ASCII ones, in rank order."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        syllables = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )
        if word and word not in seen:
            seen.add(word)
            words.append(word)
    # Non-ASCII words get mid-range ranks, so every file of a realistic size has some.
    for i, word in enumerate(UNICODE_WORDS):
        words.insert(min(len(words), 20 + 7 * i), word)
    return words


def generate(
    root: str | Path,
    *,
    files: int = 100,
    lines: int = 40,
    words_per_line: int = 12,
    vocabulary_size: int = 5000,
    seed: int = 0,
    invalid: int = 0,
) -> CorpusInfo:
    """Write the corpus under ``root`` (created if missing).

    ``root`` must be missing or empty, or hold exactly the sample these arguments
    make (written before, recognised by its marker file): then nothing is written
    again.  Anything else raises ``SampleExists`` and writes nothing, so no file
    the user owns is ever overwritten.

    ``invalid`` extra files hold bytes that are not UTF-8 (a decode error, which
    the pipeline turns into an explicit chain failure).
    """
    if files < 0 or lines < 0 or words_per_line < 1 or vocabulary_size < 1 or invalid < 0:
        raise ValueError("files, lines, invalid >= 0 and words_per_line, vocabulary_size >= 1")
    params = {
        "files": files,
        "lines": lines,
        "words_per_line": words_per_line,
        "vocabulary_size": vocabulary_size,
        "seed": seed,
        "invalid": invalid,
    }
    base = Path(root)
    known = _existing_sample(base, params)
    if known is not None:
        return known
    made = _missing(base)
    try:
        base.mkdir(parents=True, exist_ok=True)  # the marker goes here, files or none
    except OSError as exc:
        raise SampleUnwritable(
            f"{base} cannot be created ({exc.strerror or exc}): choose another DIRECTORY "
            "(nothing was written)"
        ) from exc
    try:
        return _write(base, params, made)
    except BaseException:  # a full disk, Ctrl-C: what was written goes, so the same runs again
        _take_back(made)
        raise


def _missing(path: Path) -> list[Path]:
    """The folders ``path.mkdir(parents=True)`` would make, outermost first."""
    missing: list[Path] = []
    while not os.path.lexists(path) and path != path.parent:
        missing.insert(0, path)
        path = path.parent
    return missing


def _take_back(made: list[Path]) -> None:
    """Remove the files and folders in ``made`` (this run's own), the last made first."""
    for path in reversed(made):
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.rmdir()  # empty by now; one holding anything else stays
            else:
                path.unlink()


def _write(base: Path, params: dict[str, int], made: list[Path]) -> CorpusInfo:
    """Write the sample of ``params`` into folder ``base``; every path made joins ``made``."""
    files, lines, invalid = params["files"], params["lines"], params["invalid"]
    words_per_line, seed = params["words_per_line"], params["seed"]
    vocabulary_size = params["vocabulary_size"]
    rng = random.Random(seed)
    vocab = vocabulary(vocabulary_size, rng)
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) ** 1.07 for rank in range(len(vocab))))
    total = 0
    written: list[str] = []
    for i in range(files):
        folder = base / f"part-{i // FILES_PER_FOLDER:02d}"
        _mkdir(folder, made)
        out: list[str] = []
        for _ in range(lines):
            n = max(1, int(rng.gauss(words_per_line, words_per_line / 4)))
            chosen = rng.choices(vocab, cum_weights=cumulative, k=n)
            total += n
            tokens = []
            for j, word in enumerate(chosen):
                if j == 0 or rng.random() < 0.04:
                    word = word[:1].upper() + word[1:]
                tokens.append(word + rng.choice(_PUNCT))
            out.append(" ".join(tokens))
        made.append(folder / f"doc-{i:05d}.txt")
        made[-1].write_text("\n".join(out) + "\n", encoding="utf-8")
        written.append(f"{folder.name}/doc-{i:05d}.txt")
    for k in range(invalid):
        folder = base / "broken"
        _mkdir(folder, made)
        made.append(folder / f"latin1-{k:03d}.txt")
        made[-1].write_bytes(
            "Größe und Maße\n".encode("latin-1") + b"\xff\xfe not utf-8 \xc3\x28\n"
        )
        written.append(f"broken/latin1-{k:03d}.txt")
    info = CorpusInfo(base, files, lines, total, invalid)
    marker = {
        "tool": "xor-ack wordcount-sample",
        **params,
        "words": total,
        "files_written": written,
    }
    made.append(base / SAMPLE_MARKER)
    made[-1].write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    return info


def _mkdir(folder: Path, made: list[Path]) -> None:
    if not folder.is_dir():
        folder.mkdir()
        made.append(folder)


def _listed(base: Path) -> set[str]:
    """Every file and folder under ``base``, relative, the marker left out."""
    return {p.relative_to(base).as_posix() for p in base.rglob("*")} - {SAMPLE_MARKER}


def is_sample(base: Path) -> bool:
    """Does folder ``base`` hold a sample this tool wrote and nothing else (``make clean``)?"""
    try:
        written = json.loads((base / SAMPLE_MARKER).read_text(encoding="utf-8"))["files_written"]
        return _only(base, set(written))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _only(base: Path, written: set[str]) -> bool:
    """``base`` holds the files ``written`` (and their folders), nothing else but the marker."""
    return _listed(base) == written | {name.rsplit("/", 1)[0] for name in written}


def _existing_sample(base: Path, params: dict[str, int]) -> CorpusInfo | None:
    """The sample already in ``base`` if it is exactly this one; None if ``base`` is free.

    Raises ``SampleExists`` for a folder that holds anything else.
    """
    if not base.exists():
        return None
    if not base.is_dir():
        raise SampleExists(f"{base} is not a folder: choose another DIRECTORY")
    found = _listed(base)
    marker_path = base / SAMPLE_MARKER
    if not found and not marker_path.exists():
        return None
    try:
        marker = json.loads(marker_path.read_text(encoding="utf-8"))
        written = set(marker["files_written"])
        same = all(marker.get(key) == value for key, value in params.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise SampleExists(
            f"{base} is not empty and is no sample of this tool: choose an empty or new "
            "DIRECTORY (nothing was written)"
        ) from None
    if not same or not _only(base, written):
        raise SampleExists(
            f"{base} holds another sample or files of its own: choose an empty or new "
            "DIRECTORY, or the same options as before (nothing was written)"
        )
    return CorpusInfo(
        base, params["files"], params["lines"], int(marker["words"]), params["invalid"]
    )
