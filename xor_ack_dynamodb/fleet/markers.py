"""Marker items a fleet keeps next to its chains: pages of evicted tokens, completions.

Markers live in the chain table under keys no chain tag of the fleet takes
(``<tag>#xor-ack-fleet/...``), with the item's own attribute names
(``xor_ack_dynamodb.dynamodb.item``): ``chain_id`` (the generation they belong to),
``tokens`` (a page's tokens), ``version`` (page 0 only: the chain's version when
its token window was first full, which places every later window's tokens in the
chain's stream of tokens, ``once.py``), ``created_at`` and ``expires_at`` (TTL:
garbage collection, after any re-delivery a queue can still make).  They carry no
``stamp``, so no client takes them for a chain.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from ..dynamodb import item as I
from ..dynamodb.item import FLEET_MARKER
from ..errors import InvalidTag

#: How long markers outlive their write: SQS keeps a message at most 14 days.
DEFAULT_MARKER_TTL = 14 * 86_400
#: How long page 0 outlives its write, at least: it holds the version at which the chain's
#: window was first full, which places every later token for the whole life of the job,
#: so it lives as long as a job's deadline may be (a year), not SQS's 14 days.  A chain
#: older than that without page 0 is refused (``MarkerMissing``), never guessed about.
FIRST_PAGE_TTL = 366 * 86_400


def page_key(tag: str, chain_id: bytes, page: int) -> str:
    return f"{tag}{FLEET_MARKER}page/{chain_id.hex()}/{page}"


def done_key(tag: str, chain_id: bytes) -> str:
    return f"{tag}{FLEET_MARKER}done/{chain_id.hex()}"


#: The longest a marker key adds to its tag: a page's, with a 16-digit chain id and a page
#: number of up to 20 digits (``page_key``).
MARKER_SUFFIX_BYTES = len(FLEET_MARKER) + len("page/") + 16 + len("/") + 20
#: The longest tag a fleet job may have: its markers' keys must fit DynamoDB's 2,048 bytes.
MAX_JOB_TAG_BYTES = InvalidTag.MAX_BYTES - MARKER_SUFFIX_BYTES


def check_job_tag(tag: str) -> None:
    """``InvalidTag`` unless ``tag`` is one, short enough for its markers' keys (a longer one
    would be accepted by its create, and its first marker write refused at every receive),
    and not holding the markers' infix ``FLEET_MARKER``."""
    size = len(InvalidTag.check(tag).encode("utf-8"))
    if FLEET_MARKER in tag:  # its chain would be taken for a marker (no event) or meet one
        raise InvalidTag(
            f"a fleet job's tag must not hold {FLEET_MARKER!r}: the fleet keeps its markers"
            f" under such keys, and a chain there is taken for one (its events are not"
            f" told); give another tag, not {tag!r}"
        )
    if size > MAX_JOB_TAG_BYTES:
        raise InvalidTag(
            f"a fleet job's tag must be at most {MAX_JOB_TAG_BYTES} bytes of UTF-8 (its marker"
            f" keys add up to {MARKER_SUFFIX_BYTES} to it), not {size}"
        )


class Markers:
    """Reads and writes marker items over an aiobotocore DynamoDB client.

    ``writes`` and ``reads`` count the requests (for costs and tests).  Pages
    never change once written, so the ones read are remembered (``cache_size``).
    """

    def __init__(
        self,
        client: Any,
        *,
        table: str,
        partition_key: str,
        ttl: float = DEFAULT_MARKER_TTL,
        cache_size: int = 4096,
    ) -> None:
        self._client = client
        self.table = table
        self.partition_key = partition_key
        self.ttl = ttl
        self.writes = 0
        self.reads = 0
        self._pages: OrderedDict[str, tuple[bytes, int | None]] = OrderedDict()
        self._cache_size = cache_size

    @property
    def first_page_ttl(self) -> float:
        """Seconds page 0 outlives its write: a year, or ``ttl`` if longer."""
        return max(float(self.ttl), FIRST_PAGE_TTL)

    async def _write(
        self,
        key: str,
        chain_id: bytes,
        tokens: bytes | None = None,
        version: int | None = None,
        ttl: float | None = None,
    ) -> None:
        """Write the marker ``key`` (an UpdateItem, as every write of the table: one permission);
        it expires ``ttl`` seconds later (default: the markers' ``ttl``)."""
        now = time.time()
        names = {"#c": I.CHAIN_ID, "#n": I.CREATED_AT, "#e": I.EXPIRES_AT}
        values: dict[str, Any] = {
            ":c": {"B": chain_id},
            ":n": {"N": str(int(now))},
            ":e": {"N": str(int(now + (self.ttl if ttl is None else ttl)))},
        }
        update = "SET #c = :c, #n = :n, #e = :e"
        if tokens is not None:
            names["#t"] = I.TOKENS
            values[":t"] = {"B": tokens}
            update += ", #t = :t"
        if version is not None:
            names["#v"] = I.VERSION
            values[":v"] = {"N": str(version)}
            update += ", #v = :v"
        self.writes += 1
        await self._client.update_item(
            TableName=self.table,
            Key={self.partition_key: {"S": key}},
            UpdateExpression=update,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def has_page(self, tag: str, chain_id: bytes, page: int) -> bool:
        """Is the page known to exist (written or read by this process)?"""
        return page_key(tag, chain_id, page) in self._pages

    async def put_page(
        self, tag: str, chain_id: bytes, page: int, tokens: bytes, version: int | None = None
    ) -> None:
        """Write a page (its content is fixed by the chain's history: a re-write is the same).

        ``version``: page 0's, the chain's version when its window was first full.
        """
        key = page_key(tag, chain_id, page)
        ttl = self.first_page_ttl if page == 0 else None  # page 0: for the job's whole life
        await self._write(key, chain_id, tokens, version, ttl)
        self._remember(key, tokens, version)

    async def full_at(self, tag: str, chain_id: bytes) -> int | None:
        """The version at which the chain's window was first full (page 0's), None: no page 0."""
        key = page_key(tag, chain_id, 0)
        if key not in self._pages:
            await self.pages(tag, chain_id, range(1))
        found = self._pages.get(key)
        return None if found is None else found[1]

    def _remember(self, key: str, tokens: bytes, version: int | None) -> None:
        self._pages[key] = (tokens, version)
        self._pages.move_to_end(key)
        while len(self._pages) > self._cache_size:
            self._pages.popitem(last=False)

    async def pages(self, tag: str, chain_id: bytes, pages: range) -> dict[int, bytes | None]:
        """The tokens of each page in ``pages`` (None: no such page), strongly consistent."""
        found: dict[int, bytes | None] = {}
        missing: dict[str, int] = {}
        for page in pages:
            key = page_key(tag, chain_id, page)
            if key in self._pages:
                found[page] = self._pages[key][0]
            else:
                missing[key] = page
        keys = list(missing)
        for start in range(0, len(keys), 100):
            request = {
                self.table: {
                    "Keys": [{self.partition_key: {"S": k}} for k in keys[start : start + 100]],
                    "ConsistentRead": True,
                }
            }
            while request:
                self.reads += 1
                response = await self._client.batch_get_item(RequestItems=request)
                for raw in response.get("Responses", {}).get(self.table, []):
                    key = raw[self.partition_key]["S"]
                    tokens = bytes(raw.get(I.TOKENS, {}).get("B", b""))
                    version = raw.get(I.VERSION, {}).get("N")
                    self._remember(key, tokens, None if version is None else int(version))
                    found[missing[key]] = tokens
                request = response.get("UnprocessedKeys") or {}
        for page in pages:
            found.setdefault(page, None)
        return found

    async def claimed(self, key: str) -> bool:
        """Does the marker ``key`` exist (strongly consistent)?"""
        self.reads += 1
        response = await self._client.get_item(
            TableName=self.table,
            Key={self.partition_key: {"S": key}},
            ConsistentRead=True,
            ProjectionExpression="#k",
            ExpressionAttributeNames={"#k": self.partition_key},
        )
        return "Item" in response

    async def put(self, key: str, chain_id: bytes) -> None:
        await self._write(key, chain_id)
