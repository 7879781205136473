"""Types of the optional C fast path of ``xor_ack_dynamodb.memory.Ack`` (see _ackcore.c)."""

from collections.abc import Callable
from typing import Protocol

ADDED: int
FAILED: int

class EntryLike(Protocol):
    """What both cores store per chain (``_ackcore.Entry`` and ``memory._PyEntry``)."""

    value: int
    gen: int
    t_added: float
    flags: int
    def __init__(self, value: int, nbytes: int, gen: int, t_added: float, flags: int) -> None: ...
    @property
    def nbytes(self) -> int: ...

class Entry:
    value: int
    gen: int
    t_added: float
    flags: int
    def __init__(self, value: int, nbytes: int, gen: int, t_added: float, flags: int) -> None: ...
    @property
    def nbytes(self) -> int: ...

class Core:
    _chains: dict[str, EntryLike]
    _buckets: list[dict[str, EntryLike]]
    _acked_listeners: tuple[Callable[[str], object], ...]
    _high_water: int
    _gen: int
    _added: int
    _acked: int
    _pending: int
    _ack_time_total: float
    _ack_time_max: float
    def add(self, tag: str, stamp: bytes | bytearray | memoryview) -> bool: ...
    def stamp(self, tag: str, stamp: bytes | bytearray | memoryview) -> bool: ...

def now() -> float: ...
