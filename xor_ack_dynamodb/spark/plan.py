"""The chain of one attempt at one input: its tag."""

from __future__ import annotations

from ..errors import InvalidTag


def file_tag(run_id: str, path: str, attempt: int, *, limit: int = InvalidTag.MAX_BYTES) -> str:
    """The chain of one attempt at one file: ``run_id/path#attempt``.

    A late stamp of an old attempt can never touch the replay's chain.  Paths
    too long for a DynamoDB key (2,048 bytes, the tag whole), or that are not valid
    UTF-8 (a file name's bytes, a lone surrogate), are replaced by their SHA-256.
    """
    tag = f"{run_id}/{path}#{attempt}"
    try:
        if len(tag.encode("utf-8")) <= limit:
            return tag
    except UnicodeEncodeError:
        pass
    import hashlib

    try:  # a file name's bytes as os.listdir escapes them
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte is escaped as (e.g. "\ud800")
        raw = path.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()
    return f"{run_id}/sha256:{digest}#{attempt}"
