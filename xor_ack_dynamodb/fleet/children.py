"""What a handler returns: its children's payloads, read before any child is sent.

``None`` is no children; any other iterable (a list, a tuple, a generator, a set) is
read once, each item a child's payload.  A str, bytes or a mapping is iterable too,
but no handler means a child per character, byte or key: returning ``"ok"`` once made
two child jobs, ``"o"`` and ``"k"``.  Those, and a value that is no iterable at all,
are refused (``InvalidChildren``); so is a child whose payload cannot travel as JSON
(``payloads.check_payload``), which once raised a bare ``TypeError`` from the sender
on every receive until the queue gave up on it.

The order of the children does not matter: a child is named by its payload
(``envelope.child_id``), so a set, whose order differs between processes, or a
generator yielding results as they finish, names the same children when its job runs
again.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

from .errors import HandlerCancelled, HandlerExited, InvalidChildren, InvalidPayload
from .payloads import check_payload

#: Iterable, but never a list of children.
_NOT_CHILDREN = (str, bytes, bytearray, memoryview, Mapping)


def children_of(result: object, tag: str, message_id: str) -> list[Any]:
    """The children's payloads a handler returned; ``InvalidChildren`` if it returned none."""
    if result is None:
        return []
    if isinstance(result, _NOT_CHILDREN):
        raise InvalidChildren(tag, message_id, type(result).__name__)
    try:
        found = iter(result)  # type: ignore[call-overload]
    except TypeError as exc:
        raise InvalidChildren(tag, message_id, type(result).__name__) from exc
    payloads = list(found)
    for index, payload in enumerate(payloads):
        try:
            check_payload(tag, payload, None)
        except InvalidPayload as exc:
            kind = type(payload).__name__
            raise InvalidChildren(tag, message_id, kind, child=index, why=exc.why) from exc
    return payloads


async def handler_children(
    handler: Callable[[Any], Any], message: Any, tag: str, message_id: str
) -> list[Any]:
    """The children's payloads ``handler`` returns for ``message``.  A plain function runs
    in a thread, and so does reading the children it returns (a generator's body runs as
    it is read): it may block, the worker's loop may not.  A ``CancelledError`` the handler
    raises while its task is not being cancelled is :class:`HandlerCancelled`, and a
    ``sys.exit()`` in it :class:`HandlerExited`."""
    try:
        if inspect.iscoroutinefunction(handler):
            return children_of(await handler(message), tag, message_id)
        result = await asyncio.to_thread(_plain, handler, message, tag, message_id)
        if inspect.isawaitable(result):
            return children_of(await result, tag, message_id)
        return cast(list[Any], result)
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # this message's task is being cancelled: the worker is stopping
        raise HandlerCancelled(message_id) from exc
    except SystemExit as exc:  # sys.exit() in the handler: that message's failure only
        raise HandlerExited(message_id, exc.code) from exc


def _plain(handler: Callable[[Any], Any], message: Any, tag: str, message_id: str) -> Any:
    """A plain handler's result, in a thread: its children, or an awaitable of them.  A
    ``StopIteration`` it raises (a ``next()`` that found nothing) is a ``RuntimeError``, as
    a generator's is (PEP 479): asyncio cannot hand it from the thread (up to Python
    3.12 the message's task waited for ever)."""
    try:
        result = handler(message)
        if inspect.isawaitable(result):
            return result
        return children_of(result, tag, message_id)
    except StopIteration as exc:
        raise RuntimeError(f"the handler of message {message_id} raised StopIteration") from exc
