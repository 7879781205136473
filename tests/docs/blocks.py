"""The fenced code blocks of the README and docs/*.md, and the shell commands in them."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell"})

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it starts (the fence's line, 1-based), its info string, its text."""

    path: Path
    line: int
    language: str
    flags: tuple[str, ...]
    code: str

    @property
    def where(self) -> str:
        """``README.md:42``: the test id and what a failure names."""
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every docs/*.md, in a stable order."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of one Markdown file (CommonMark fences, indented up to 3 spaces)."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None or len(opening["indent"]) > 3:
            i += 1
            continue
        fence = opening["fence"]
        words = opening["info"].split()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = _FENCE.match(lines[j])
            if (
                closing is not None
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"].strip()
            ):
                break
            body.append(lines[j][len(opening["indent"]) :])
            j += 1
        else:
            raise ValueError(f"{path.name}:{i + 1}: the fence opened here is never closed")
        language = words[0].lower() if words else ""
        found.append(Block(path, i + 1, language, tuple(words[1:]), "\n".join(body) + "\n"))
        i = j + 1
    return found


def all_blocks(root: Path = ROOT) -> list[Block]:
    return [block for path in doc_files(root) for block in blocks(path)]


def logical_lines(script: str) -> list[str]:
    """The script's lines with backslash continuations joined and comments removed."""
    lines: list[str] = []
    pending = ""
    for raw in script.splitlines():
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        line = _uncomment(pending + raw).strip()
        pending = ""
        if line:
            lines.append(line)
    if pending.strip():
        lines.append(_uncomment(pending).strip())
    return lines


def _uncomment(line: str) -> str:
    """The line up to its first ``#`` that starts a comment (outside quotes, after a space)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


_SUBSTITUTION = re.compile(r"\$\((?P<inner>[^()]*)\)")


def commands(line: str) -> list[list[str]]:
    """The simple commands of one logical shell line, as argument lists.

    Splits on ``&&``, ``||``, ``;`` and ``|``, looks inside ``$( ... )``
    substitutions (``eval "$(xor-ack local start)"``, ``X=$(xor-ack ...)``), and
    drops leading ``VAR=value`` assignments.
    """
    pieces = [match["inner"] for match in _SUBSTITUTION.finditer(line)]
    pieces.append(_SUBSTITUTION.sub("SUBSTITUTED", line))
    found: list[list[str]] = []
    for piece in pieces:
        lexer = shlex.shlex(piece, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""  # comments are gone; a "#" here is part of a word
        words: list[str] = []
        for token in [*lexer, ";"]:
            if token not in _OPERATORS:
                words.append(token)
                continue
            while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
                words.pop(0)
            if words and words != ["eval", "SUBSTITUTED"]:
                found.append(words)
            words = []
    return found


_OPERATORS = frozenset({"&&", "||", ";", "|", "&"})
