"""How the verbs print: aligned ``key: value`` lines, times in UTC, values on one line."""

from __future__ import annotations

import shlex
import time

import click


def shown(value: str) -> str:
    """A value of the user's or of the table's (a tag, a reason) as text output prints it.

    As it is when every character of it prints and it does not start with a quote; else
    Python's ``repr``, quoted and escaped (``'two\\nlines'``, ``'\\x1b[2J'``): always one
    line, no terminal control sequence, no tab to shift a column, and never mistaken for
    a plain value (no plain one starts with a quote).  JSON output prints values exactly.
    """
    if value and value.isprintable() and value[0] not in "'\"":
        return value
    return repr(value)


def escaped(text: str) -> str:
    """``text`` with each character that does not print (a control character, a bidi
    override, ...) escaped as ``repr`` escapes it: for a value inside a message's line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def argument(value: str) -> str:
    """``value`` as one shell word that gives it back exactly, on one line: for the
    commands a message tells the user to run.

    ``shlex.quote`` when every character prints; else bash's ``$'...'`` (also zsh's and
    ksh's), each character that does not print as its escape (``$'two\\nlines'``), which
    the error line then shows as it is.
    """
    if value.isprintable():
        return shlex.quote(value)
    return "$'" + "".join(_ansi_c(c) for c in value) + "'"


#: The escapes ``$'...'`` reads by name, for the common control characters.
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _ansi_c(c: str) -> str:
    if c in "\\'":
        return "\\" + c
    if c in _NAMED:
        return _NAMED[c]
    if c.isprintable():
        return c
    code = ord(c)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _when(seconds: float | None) -> str:
    """UTC to the second; the number as it is for a time no date is (another tool's item
    in nanoseconds: ``chain show`` and ``chain list`` ended with a bare OSError)."""
    if seconds is None:
        return "-"
    try:
        moment = time.gmtime(seconds)
    except (OverflowError, OSError, ValueError):
        return f"{seconds:g}"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", moment)


def _echo_pairs(pairs: list[tuple[str, object]]) -> None:
    width = max(len(key) for key, _ in pairs)
    for key, value in pairs:
        click.echo(f"{key + ':':<{width + 1}} {value}")
