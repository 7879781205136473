"""The errors a user can act on, each said in one ``error: ...`` line."""

from __future__ import annotations

from typing import IO, Any

import click
from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from ..dynamodb.aws import error_code, error_message, is_loopback
from ..dynamodb.wrong_key import refuses_key
from ..errors import CorruptItem, InvalidTTL, RegionMissing, XorAckError
from .show import argument, escaped


class UserError(click.ClickException):
    """A mistake the user can fix: one ``error: ...`` line on stderr, exit 1."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {_one_line(self.format_message())}", err=file is None, file=file)


def _one_line(text: str) -> str:
    """``text`` (an error's message) as one line: its lines joined with ``; ``, and any other
    character that does not print escaped (``escaped``): a tag in it is no terminal escape."""
    return escaped("; ".join(part.strip() for part in text.strip().splitlines() if part.strip()))


def tag_escaped(exc: BaseException) -> str:
    """``str(exc)`` (an ``XorAckError``'s ``cli_message`` where it has one: the commands'
    words) with its tag (``.tag``) escaped first: a line break in a tag would be joined
    with ``; `` as the message's own lines are, naming another tag."""
    text = getattr(exc, "cli_message", None) or str(exc)
    tag = getattr(exc, "tag", None)
    if isinstance(tag, str) and tag and escaped(tag) != tag:
        text = text.replace(tag, escaped(tag))
    return text


def explain(exc: BaseException) -> str | None:
    """The one-line message for an error a user can act on, or None for a bug."""
    if isinstance(exc, CorruptItem) and getattr(exc, "foreign", False):
        return (
            f'{exc.code}: "{escaped(exc.tag)}": the stored item is not a chain: it holds none '
            "of a chain's binary attributes (stamp, chain_id, tokens), so another program "
            "wrote it; nothing was written. Check --table and the tag: no xor-ack command "
            "changes or deletes it"
        )
    if isinstance(exc, CorruptItem):  # its remedy in the commands' words, not delete(tag)'s
        return (
            f'{exc.code}: "{escaped(exc.tag)}": the stored item is not a chain this tool can '
            f'read: attribute "{exc.attribute}" {_one_line(exc.problem)}; nothing was written. '
            f"Repair the item, or remove it (`xor-ack chain delete {argument(exc.tag)}`) and "
            "create the chain again"
        )
    if isinstance(exc, RegionMissing):  # the options' words, not the library's
        return (
            f"{exc.code}: no AWS region for AWS's endpoint: pass --region or set AWS_REGION;"
            ' for DynamoDB Local, `eval "$(xor-ack local start)"`, or pass --endpoint-url'
            " (`xor-ack local status` names a running one's)"
        )
    if isinstance(exc, XorAckError):
        return f"{exc.code}: {_one_line(tag_escaped(exc))}"
    if isinstance(exc, ClientError):
        code = error_code(exc) or "ClientError"
        message = _one_line(error_message(exc) or str(exc))
        hint = ""
        if code == "ResourceNotFoundException":
            hint = (
                " (the table is not at this endpoint: create it with `xor-ack table create` and"
                " the same --table, or give --table a table that is there)"
            )
        elif refuses_key(exc):
            hint = (
                " (the table's partition key is not --partition-key's: "
                "`xor-ack table describe` names it; pass it as --partition-key, or pass --table)"
            )
        elif code in ("UnrecognizedClientException", "InvalidSignatureException"):
            hint = " (check the AWS credentials)"
        return f"{code}: {message}{hint}"
    if isinstance(exc, ParamValidationError):
        return _one_line(str(exc))
    if isinstance(exc, BotoCoreError):
        text = _one_line(str(exc))
        if "Could not connect to the endpoint URL" in text:
            # DynamoDB's: the verbs that use SQS ask it first (``SqsSender.check``), and its
            # ``QueueUnavailable`` names the queue and the SQS endpoint instead.
            url = getattr(exc, "kwargs", {}).get("endpoint_url", "")
            if is_loopback(str(url)):
                return f"{text} (is it running? `xor-ack local start` starts one)"
            return f"{text} (check the network, --region and --endpoint-url)"
        if type(exc).__name__ == "NoRegionError":
            return "no AWS region: pass --region or set AWS_REGION (or AWS_DEFAULT_REGION)"
        if type(exc).__name__ == "NoCredentialsError":
            return "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID"
        return text
    return None


class RefusedUsage(UserError):
    """A run refused before anything was touched: one ``error:`` line, exit 2."""

    exit_code = 2


def ttl_refused(exc: InvalidTTL) -> RefusedUsage:
    """``InvalidTTL`` of a chain's lifetime, refused before any request, in the options'
    words (``chain create`` and ``submit`` take the same three)."""
    return RefusedUsage(
        f"{exc.code}: --ttl must be longer than the chain's first deadline (--timeout, "
        "else --idle-timeout): TTL only deletes the item after it; pass a longer --ttl, "
        "or none"
    )
