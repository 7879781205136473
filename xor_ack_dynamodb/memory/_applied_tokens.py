"""The write tokens the in-memory tuple-tree sinks applied, per tracker and tree.

A ``deterministic`` bolt's write carries its input's id as a token: DynamoDB's token
window applies such a write once; :class:`AppliedTokens` does the same for the trees of
an in-memory ``Acker`` or ``Ack``, shared by every sink over that tracker.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from weakref import WeakKeyDictionary


class AppliedTokens:
    """The tokens of the writes the in-memory sinks applied on one tracker, per tree, so
    that a write sent again with its token (a ``deterministic`` bolt's input processed
    twice, by any task's sink over that tracker) is applied once, as DynamoDB's token
    window does.  A tree's tokens go when it ends through a sink or starts again; at most
    ``trees`` trees are remembered, the least recently written forgotten first (one that
    timed out in its tracker, say)."""

    def __init__(self, trees: int = 100_000) -> None:
        self._trees = trees
        self._by_tree: OrderedDict[Hashable, set[bytes]] = OrderedDict()

    def first(self, tree: Hashable, token: bytes | None) -> bool:
        """True (and remembered) unless ``token`` was applied on this tree before."""
        if token is None:
            return True
        seen = self._by_tree.get(tree)
        if seen is None:
            seen = self._by_tree[tree] = set()
            if len(self._by_tree) > self._trees:
                self._by_tree.popitem(last=False)
        else:
            self._by_tree.move_to_end(tree)
        if token in seen:
            return False
        seen.add(token)
        return True

    def once(self, tree: Hashable, token: bytes | None, write: Callable[[], bool]) -> bool:
        """``write()`` (a tree's stamp; True: the tree completed) unless ``token`` was applied
        on ``tree`` before (False then); a tree it completes forgets its tokens."""
        if not self.first(tree, token):
            return False  # applied before: an input processed again
        completed = write()
        if completed:
            self.ended(tree)
        return completed

    def ended(self, tree: Hashable) -> None:
        self._by_tree.pop(tree, None)


#: Each tracker's applied tokens, shared by every sink over it (kept while it lives).
_TOKENS: WeakKeyDictionary[object, AppliedTokens] = WeakKeyDictionary()


def tokens_of(tracker: object) -> AppliedTokens:
    """``tracker``'s applied tokens (made on first use)."""
    tokens = _TOKENS.get(tracker)
    if tokens is None:
        tokens = _TOKENS[tracker] = AppliedTokens()
    return tokens
