"""What ``xor-ack chain``'s own arguments and options take: a stamp in hex, a ``--reason``,
a ``--token``; anything else is a usage error naming it, before anything is sent."""

from __future__ import annotations

import string

import click

from ..chain import MAX_TOKEN_BYTES, check_token
from ..errors import InvalidToken
from ..lifecycle import TIMEOUT_REASON


def hex_stamp(ctx: click.Context, param: click.Parameter, value: str | None) -> bytes | None:
    """A stamp in hex (``0x`` allowed); empty or not hex is a usage error."""
    if value is None:
        return None
    text = value.strip()
    if text.lower().startswith("0x"):
        text = text[2:]
    try:
        data = bytes.fromhex(text)
    except ValueError:
        digits = "".join(text.split())
        if digits and all(c in string.hexdigits for c in digits) and len(digits) % 2:
            raise click.BadParameter(
                f"{value!r} has an odd number of hex digits ({len(digits)}): a byte is two,"
                f" e.g. 0{digits}"
            ) from None
        raise click.BadParameter(f"{value!r} is not hexadecimal (e.g. 9f86d081884c7d65)") from None
    if not data:
        raise click.BadParameter("a stamp cannot be empty (e.g. 9f86d081884c7d65)")
    return data


def not_empty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An option that cannot be empty (``--reason``, ``--token``): a usage error if it is."""
    if value == "":
        raise click.BadParameter(f"a {param.name} cannot be empty")
    return value


def reason_option(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--reason``: not empty, and not the deadline's own ``timeout`` (the library refuses
    both): a usage error if it is."""
    if not_empty(ctx, param, value) == TIMEOUT_REASON:
        raise click.BadParameter(
            f'"{TIMEOUT_REASON}" is the reason a chain\'s deadline fails it with: give one of '
            'your own, e.g. --reason "timed out calling the API"'
        )
    utf8(value)
    return value


def utf8(value: str | None) -> None:
    """A usage error for an option's text UTF-8 cannot hold (bytes the shell passed as they
    were, e.g. Latin-1)."""
    try:
        (value or "").encode("utf-8")
    except UnicodeEncodeError:
        raise click.BadParameter(
            f"{value!r} is no text UTF-8 can hold (bytes of another encoding?): give UTF-8 text"
        ) from None


def token_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--token``: 1 to 16 bytes of UTF-8, as the library takes it; a usage error if not."""
    utf8(value)
    try:
        check_token(not_empty(ctx, param, value))
    except InvalidToken as exc:
        raise click.BadParameter(
            f"must be 1 to {MAX_TOKEN_BYTES} bytes of UTF-8, not {len(value or '')} characters"
            f" ({len((value or '').encode('utf-8', 'replace'))} bytes)"
        ) from exc
    return value
