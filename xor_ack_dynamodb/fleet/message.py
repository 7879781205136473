"""What a fleet's handler is given (``Message``), and what handling one message ended in
(``Handled``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .envelope import Envelope
from .once import Verdict


@dataclass(frozen=True)
class Message:
    """What a handler receives: the payload, and what the message is.

    ``body``: the message as it came (the envelope's JSON: what a re-send needs);
    ``chain_id``: the generation of the job's chain; ``parent_id``: the identity (hex)
    of the message that sent it, ``None`` for a job's root; ``index``: its place among
    its parent's children.
    """

    payload: Any
    tag: str
    message_id: str
    receive_count: int = 1
    body: str = ""
    chain_id: bytes = b""
    parent_id: str | None = None
    index: int | None = None


Handler = Callable[[Message], "Iterable[Any] | Awaitable[Iterable[Any] | None] | None"]


@dataclass(frozen=True)
class Handled:
    """What ``Fleet.handle`` did with one message."""

    envelope: Envelope
    verdict: Verdict
    children: int = 0
    acked: bool = False
    continued: bool = False
