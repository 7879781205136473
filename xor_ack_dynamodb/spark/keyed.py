"""Deterministic stamps and idempotency tokens: keyed hashes, never per-attempt randomness.

A Spark task attempt that is re-run (after a crash, for speculation, after a
lost executor) must produce byte-identical stamps for identical work, so that
its writes are recognised by their token and not XORed in twice.  Every value
here is a BLAKE2b hash (16 bytes) keyed by the run id, of a tuple of typed,
length-prefixed fields, so no two different tuples share an encoding.  A hash
that comes out all zeros (chance 2**-128) is re-drawn by extending the input,
because an all-zero stamp is no stamp.

The values per chain (tag = one attempt of one file, P = the round's stage-2
partitions)::

    file stamp     F       = H("file", tag)
    bucket stamp   B[p]    = H("bucket", tag, p, canonical(words of the file that go to p))
    stage 1 stamp          = F ^ B[0] ^ ... ^ B[P-1]       token H("split", tag, value)
    stage 2 stamp (task p) = H("bucket", tag, p, canonical(words task p received))
                                                            token H("count", tag, p, value)

``canonical`` is the sorted list of ``(word, count)`` pairs, duplicates kept, so
the stamp a counting task applies is a function of exactly the records it saw.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from ..stamps import DEFAULT_NBYTES
from .errors import InvalidArgument

Field = str | bytes | int

_PERSON = b"xor-ack-pipe"


def _encode(value: Field) -> bytes:
    if isinstance(value, bool):
        raise TypeError("bool is not a field")
    if isinstance(value, int):
        body, kind = str(value).encode(), b"i"
    elif isinstance(value, str):
        body, kind = value.encode("utf-8", "surrogatepass"), b"s"
    else:
        body, kind = bytes(value), b"b"
    return kind + len(body).to_bytes(8, "big") + body


def canonical(entries: Iterable[tuple[str, int]]) -> bytes:
    """The order-independent encoding of a multiset of ``(word, count)`` records.

    Words are ``\\w+`` matches, so they never hold a tab or a newline.
    """
    return "\n".join(f"{word}\t{n}" for word, n in sorted(entries)).encode("utf-8")


class Keyed:
    """The stamps and tokens of one run (``run_id`` keys every hash)."""

    def __init__(self, run_id: str, nbytes: int = DEFAULT_NBYTES) -> None:
        if not run_id:
            raise InvalidArgument("run_id must be a non-empty string")
        if not 8 <= nbytes <= 64:
            raise InvalidArgument("nbytes must be between 8 and 64")
        self.run_id = run_id
        self.nbytes = nbytes
        self._key = hashlib.blake2b(
            run_id.encode("utf-8", "surrogatepass"), digest_size=32, person=_PERSON
        ).digest()

    def hash(self, *fields: Field) -> bytes:
        """``nbytes`` of keyed hash over ``fields``; never all zeros."""
        h = hashlib.blake2b(key=self._key, digest_size=self.nbytes, person=_PERSON)
        for value in fields:
            h.update(_encode(value))
        digest = h.digest()
        while not any(digest):  # pragma: no cover - chance 2**-(8*nbytes)
            h.update(b"\x00")
            digest = h.digest()
        return digest

    def file_stamp(self, tag: str) -> bytes:
        return self.hash("file", tag)

    def bucket_stamp(self, tag: str, partition: int, entries: Iterable[tuple[str, int]]) -> bytes:
        return self.hash("bucket", tag, partition, canonical(entries))

    def split_token(self, tag: str, value: bytes) -> bytes:
        return self.hash("split", tag, value)

    def count_token(self, tag: str, partition: int, value: bytes) -> bytes:
        return self.hash("count", tag, partition, value)


def xor_into(acc: int, value: bytes) -> int:
    """XOR a stamp into an integer accumulator (the fast way to combine many)."""
    return acc ^ int.from_bytes(value, "big")


def to_stamp(acc: int, nbytes: int = DEFAULT_NBYTES) -> bytes:
    return acc.to_bytes(nbytes, "big")
