"""What the core yields and keeps: effects (Call, Sleep), outcomes, entries, counters."""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias

from botocore.exceptions import BotoCoreError, ClientError

from ...chain import ChainState
from ...errors import CorruptItem
from ...stamps import Stamp
from .expressions import Update

#: Errors of one chain that a client hands to the callers of that chain's write (its
#: entries of a ``*_many`` call, its merged stamps) as their outcome, not to everyone.
ENTRY_ERRORS = (ClientError, BotoCoreError, CorruptItem)


@dataclass(frozen=True)
class Call:
    """Send ``op`` (a low-level DynamoDB client method name) with ``params``.

    ``batch``: a write (a stamp's, a create's), as the structured value ``params`` was
    rendered from, which a client may send in a PartiQL batch with other chains' writes
    (``_batches`` renders its statement from it: a stamp's ``UPDATE`` with
    ``batch_writes``; ``_statements`` also a create's ``INSERT``); its outcome is the same.
    """

    op: str
    params: dict[str, Any]
    batch: Update | None = None


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` before going on."""

    seconds: float


Effect: TypeAlias = Call | Sleep


Op: TypeAlias = Generator[Effect, Any, Any]


#: After a cancelled transaction: fresh states, items that met another writer, rejected items.
CancelReport: TypeAlias = tuple[dict[str, ChainState | None], set[str], dict[str, Exception]]


#: What each stamp of a batch came to: its new state, or the error that kept it out.
Outcome: TypeAlias = Stamp | Exception


@dataclass
class ClientStats:
    """Counters of one client: requests sent, writes, stamps applied, races lost."""

    requests: Counter[str] = field(default_factory=Counter)
    writes: int = 0
    stamps: int = 0
    conflicts: int = 0
    retries: int = 0
    resent_writes_recognised: int = 0
    cache_refreshes: int = 0  # writes planned on an old remembered state, planned again
    batched_writes: int = 0  # writes sent as statements of a BatchExecuteStatement

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    def unsent(self, write: Call) -> None:
        """A write the core counted as it planned it, which the client did not send (its
        callers left first): its request and its write taken back."""
        self.requests["".join(word.title() for word in write.op.split("_"))] -= 1
        self.writes -= 1

    def snapshot(self) -> dict[str, int]:
        """Every counter by its field's name (``requests``: their total), then the
        requests per operation (``requests.UpdateItem``, ...)."""
        counts: dict[str, int] = {f.name: getattr(self, f.name) for f in fields(self)}
        counts["requests"] = self.total_requests
        return counts | {f"requests.{op}": n for op, n in sorted(self.requests.items())}


@dataclass(frozen=True)
class Entry:
    """One caller's stamp inside a (possibly coalesced) write."""

    stamp: Stamp
    token: bytes | None = None
