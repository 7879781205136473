"""A sample corpus for the demo, the tests and the benchmark: deterministic given a seed.

``files`` text files of ``lines`` lines each, under ``part-NN/`` folders (so the
listing is recursive), words drawn from a Zipf-like vocabulary of made-up
words plus a few non-ASCII ones, some capitalised, with punctuation.  The same
arguments always write the same bytes.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from pathlib import Path

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
    """Write the corpus under ``root`` (created; existing sample files are overwritten).

    ``invalid`` extra files hold bytes that are not UTF-8 (a decode error, which
    the pipeline turns into an explicit chain failure).
    """
    if files < 0 or lines < 0 or words_per_line < 1 or vocabulary_size < 1 or invalid < 0:
        raise ValueError("files, lines, invalid >= 0 and words_per_line, vocabulary_size >= 1")
    rng = random.Random(seed)
    vocab = vocabulary(vocabulary_size, rng)
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) ** 1.07 for rank in range(len(vocab))))
    base = Path(root)
    total = 0
    for i in range(files):
        folder = base / f"part-{i // FILES_PER_FOLDER:02d}"
        folder.mkdir(parents=True, exist_ok=True)
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
        (folder / f"doc-{i:05d}.txt").write_text("\n".join(out) + "\n", encoding="utf-8")
    for k in range(invalid):
        folder = base / "broken"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"latin1-{k:03d}.txt").write_bytes(
            "Größe und Maße\n".encode("latin-1") + b"\xff\xfe not utf-8 \xc3\x28\n"
        )
    return CorpusInfo(base, files, lines, total, invalid)
