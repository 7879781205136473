"""Tags and reasons in the CLI's text output: one line each, control characters escaped.

No server: ``Settings.chains`` is a stand-in holding chains whose tags and reasons carry a
newline, a tab, a carriage return, a terminal escape or a bidi override.  Text output shows
such a value as Python's repr (quoted, escaped), a plain one as it is; JSON is exact.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from click.testing import Result

from xor_ack_dynamodb import ChainState, Stamp
from xor_ack_dynamodb.cli import Settings
from xor_ack_dynamodb.cli import submit as submit_verb
from xor_ack_dynamodb.cli import sweep as sweep_verb
from xor_ack_dynamodb.cli.events import event_line
from xor_ack_dynamodb.cli.show import argument
from xor_ack_dynamodb.errors import TagNotFound
from xor_ack_dynamodb.lifecycle import Created, Failed

from .test_cli import run

#: Each tag, and how text output shows it.
TAGS = {
    "two\nlines": "'two\\nlines'",
    "tab\there": "'tab\\there'",
    "cr\rback": "'cr\\rback'",
    "\x1b[2Jclear": "'\\x1b[2Jclear'",
    "bidi\u202eevil": "'bidi\\u202eevil'",
    "'quoted'": "\"'quoted'\"",  # starts with a quote: quoted, so never read as an escaped one
    "plain job-1": "plain job-1",
    "naïve": "naïve",
}
REASON, REASON_SHOWN = "lost\r\nthe worker", "'lost\\r\\nthe worker'"


def _state(tag: str, **more: Any) -> ChainState:
    return ChainState(tag, Stamp(b"\x01" * 8), b"c", 1, (), 1.0, 1.0, **more)


class _Chains:
    """Stands in for ``SyncXorAckDynamoDB``: every chain of ``TAGS`` open, one failed."""

    def __init__(self) -> None:
        self.states = {tag: _state(tag) for tag in TAGS}

    def list_chains(self, status: str, limit: int | None) -> Any:
        if status == "failed":
            yield from (_state(tag, failed_at=2.0, reason=REASON) for tag in TAGS)
        else:
            yield from self.states.values()

    def get(self, tag: str) -> ChainState | None:
        state = self.states.get(tag)
        return None if state is None else _state(tag, failed_at=2.0, reason=REASON)

    def create(self, tag: str, stamp: bytes, **options: Any) -> Stamp:
        return Stamp(stamp)

    def stamp(self, tag: str, stamp: bytes, token: str | None = None) -> Stamp:
        return Stamp(stamp)

    def touch(self, tag: str, timeout: float | None = None) -> ChainState:
        return _state(tag, deadline=5.0)

    def fail(self, tag: str, reason: str) -> ChainState:
        return _state(tag, failed_at=2.0, reason=reason)

    def delete(self, tag: str) -> None:
        pass

    def sweep(self, on_failed: Any = None) -> list[ChainState]:
        return [_state(tag, failed_at=2.0, reason=REASON) for tag in TAGS]


@pytest.fixture(autouse=True)
def chains(monkeypatch: pytest.MonkeyPatch) -> _Chains:
    fake = _Chains()
    monkeypatch.setattr(Settings, "chains", lambda self: fake)
    monkeypatch.setattr(sweep_verb, "_check_key", lambda settings: None)  # no table to ask
    return fake


def _lines(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "\r" not in text and "\x1b" not in text and "\u202e" not in text, repr(text)
    return text.splitlines()


def test_chain_list_text_is_one_line_per_chain_and_json_is_exact() -> None:
    """`chain list` printed each tag as it is: a tag with a newline made two lines (a
    script reading them miscounted), a tab another column, an escape reached the terminal."""
    lines = _lines(run("--table", "jobs", "chain", "list"))
    assert len(lines) == len(TAGS), lines
    assert [line.split("\t") for line in lines] == [
        [shown, "pending", "-"] for shown in TAGS.values()
    ]
    failed = _lines(run("--table", "jobs", "chain", "list", "--status", "failed"))
    assert [line.split("\t")[::3] for line in failed] == [
        [shown, REASON_SHOWN] for shown in TAGS.values()
    ]
    exact = run("--table", "jobs", "chain", "list", "--status", "failed", "--json")
    listed = [json.loads(line) for line in exact.stdout.splitlines()]
    assert [(c["tag"], c["reason"]) for c in listed] == [(tag, REASON) for tag in TAGS]


@pytest.mark.parametrize(("tag", "shown"), list(TAGS.items()))
def test_every_chain_verb_shows_the_tag_and_reason_alike(tag: str, shown: str) -> None:
    says = {
        ("chain", "create", tag, "0102"): f"{shown} created, state 0102",
        ("chain", "stamp", tag, "0102"): f"{shown} state 0102 (pending)",
        ("chain", "touch", tag, "--timeout", "5"): f"{shown} deadline 1970-01-01T00:00:05Z",
        ("chain", "fail", tag, "--reason", REASON): f"{shown} failed ({REASON_SHOWN})",
        ("chain", "delete", tag): f"{shown} deleted",
    }
    for args, line in says.items():
        assert _lines(run("--table", "jobs", *args)) == [line], args
    show = _lines(run("--table", "jobs", "chain", "show", tag))
    assert show[0] == f"tag:     {shown}"
    assert show[1] == f"state:   failed ({REASON_SHOWN})"
    exact = json.loads(run("--table", "jobs", "chain", "show", tag, "--json").stdout)
    assert (exact["tag"], exact["reason"]) == (tag, REASON)


def test_sweep_text_is_one_line_per_chain() -> None:
    lines = _lines(run("--table", "jobs", "sweep"))
    assert lines[:-1] == [
        f"{shown} failed ({REASON_SHOWN}) at 1970-01-01T00:00:02Z" for shown in TAGS.values()
    ]
    assert lines[-1].startswith(f"swept jobs: {len(TAGS)} chain(s) failed")
    exact = json.loads(run("--table", "jobs", "sweep", "--json").stdout)
    assert exact["tags"] == list(TAGS)


def test_an_event_line_is_one_line() -> None:
    for tag, shown in TAGS.items():
        line = event_line(Created(tag, b"\x0a", 0.0))
        assert line == f"1970-01-01T00:00:00.000Z created   {shown} chain=0a"
    failed = event_line(Failed("two\nlines", b"", 0.0, reason=REASON))
    assert failed == f"1970-01-01T00:00:00.000Z failed    'two\\nlines' reason={REASON_SHOWN}"
    # a time in nanoseconds (another tool's item) ended `events follow` with a bare OSError
    assert event_line(Created("ns", b"\x0a", 1.7e18)).startswith("1.7e+18 created   ns ")


def test_submit_says_the_tag_on_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    async def sent(settings: Any, tag: str, *rest: Any) -> Any:
        return type("Root", (), {"message_id": "m-1"})()

    monkeypatch.setattr(submit_verb, "_submit", sent)
    queue = "http://127.0.0.1:9/000000000000/work"
    for tag, shown in TAGS.items():
        said = _lines(run("--table", "jobs", "submit", tag, "--queue-url", queue))
        assert said == [f"{shown} submitted: root message m-1 sent to {queue}"]


def _error_lines(result: Result, count: int = 1) -> list[str]:
    text = result.stderr
    assert "\r" not in text and "\x1b" not in text and "\u202e" not in text, repr(text)
    lines = text.splitlines()
    assert len(lines) == count, lines
    assert all(line.startswith("error: ") for line in lines), lines
    return lines


def test_an_error_line_naming_a_tag_stays_one_line_without_control_characters() -> None:
    """The error of a missing tag printed the tag as it is: two lines for a newline, a
    terminal escape sent to the terminal."""
    result = run("--table", "jobs", "chain", "show", "gone\x1b[2J\nnext\r")
    assert result.exit_code == 1, result.output
    (line,) = _error_lines(result)
    assert line.startswith('error: "gone\\x1b[2J\\nnext\\r" does not exist'), line


def test_a_sweep_error_line_shows_the_tag_as_the_output_does(
    chains: _Chains, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import ClientError

    from xor_ack_dynamodb.errors import SweepIncomplete

    refused = ClientError(
        {"Error": {"Code": "ValidationException", "Message": "bad\x1b[2J item"}}, "UpdateItem"
    )

    def sweep(on_failed: Any = None) -> list[ChainState]:
        raise SweepIncomplete({}, {"two\nlines": refused, "plain": refused})

    monkeypatch.setattr(chains, "sweep", sweep)
    result = run("--table", "jobs", "sweep")
    assert result.exit_code == 1, result.output
    assert _error_lines(result, 3)[:2] == [
        f"error: {shown}: ValidationException: bad\\x1b[2J item (left for the next sweep)"
        for shown in ("'two\\nlines'", "plain")
    ]


def test_a_record_events_follow_skips_is_one_warning_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from xor_ack_dynamodb.cli import events as events_verb
    from xor_ack_dynamodb.errors import CorruptItem

    def follow(client: Any, arn: str, **options: Any) -> Any:
        yield {}, CorruptItem("two\nlines\x1b[2J", "stamp", "is empty")
        yield {}, [Created("two\nlines", b"\x0a", 0.0)]

    monkeypatch.setattr(events_verb, "streams", lambda settings: (None, "arn:stream"))
    monkeypatch.setattr(events_verb, "follow_stream", follow)
    result = run("--table", "jobs", "events", "follow", "--count", "1")
    assert _lines(result) == ["1970-01-01T00:00:00.000Z created   'two\\nlines' chain=0a"]
    assert "\x1b" not in result.stderr
    (warning,) = result.stderr.splitlines()
    assert warning.startswith("warning: CorruptItem: "), warning
    assert "two; lines\\x1b[2J" in warning, warning  # the library's message, one line


@pytest.mark.parametrize("tag", list(TAGS))
def test_a_command_an_error_names_gives_bash_the_tag_back_exactly(
    tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing tag's error says `xor-ack chain show TAG`: for a tag with a newline it
    was shlex-quoted, then escaped on the error line, so the command named another tag."""

    def missing(self: Any, tag: str, stamp: bytes, token: str | None = None) -> Stamp:
        raise TagNotFound(tag)

    monkeypatch.setattr(_Chains, "stamp", missing)
    result = run("--table", "jobs", "chain", "stamp", tag, "0102")
    assert result.exit_code == 1, result.output
    (line,) = _error_lines(result)
    word = argument(tag)
    assert f"`xor-ack chain show {word}` tells which" in line, line
    assert word.isprintable()
    said = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True)
    assert said.stdout.decode() == tag
