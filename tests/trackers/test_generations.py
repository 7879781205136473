"""The timeout / high-water engine alone: a table of operation scripts, no clock, no tracker."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from xor_ack_dynamodb.errors import InvalidArgument
from xor_ack_dynamodb.memory._generations import Generations


class Item:
    """An entry: a name to see in the results, and the generation the engine gives it."""

    __slots__ = ("gen", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.gen = -1

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Case:
    """Run ``script`` on ``Generations(buckets, high_water)``; each op that answers adds to
    ``answers``: ``tick`` the keys it expired, ``renew k`` / ``full`` a bool.  Other ops:
    ``+k`` insert, ``-k`` remove, ``=k`` replace (with the entry ``k'``)."""

    name: str
    buckets: int
    high_water: int | None
    script: str
    answers: list[object]


CASES = [
    Case("expires on the buckets-th tick (2)", 2, None, "+a tick tick", [[], ["a"]]),
    Case("expires on the buckets-th tick (3)", 3, None, "+a tick tick tick", [[], [], ["a"]]),
    Case(
        "an entry lives whole generations from its insert",
        3,
        None,
        "tick +a tick tick tick",
        [[], [], [], ["a"]],
    ),
    Case(
        "a tick expires only the oldest generation",
        3,
        None,
        "+a tick +b tick +c tick tick tick",
        [[], [], ["a"], ["b"], ["c"]],
    ),
    Case(
        "expired in the order they entered their generation",
        2,
        None,
        "+c +a +b tick tick",
        [[], ["c", "a", "b"]],
    ),
    Case(
        "renew moves an entry to the newest generation",
        3,
        None,
        "+a tick tick renew tick tick tick",
        [[], [], True, [], [], ["a"]],
    ),
    Case(
        "renew in the newest generation changes nothing",
        2,
        None,
        "+a renew tick tick",
        [True, [], ["a"]],
    ),
    Case("renew of an unknown key is False", 2, None, "renew", [False]),
    Case("renew of a removed key is False", 2, None, "+a -a renew", [False]),
    Case(
        "a renewed entry leaves its old generation",
        2,
        None,
        "+a +b tick renew tick tick",
        [[], True, ["b"], ["a"]],
    ),
    Case("a removed entry never expires", 2, None, "+a -a tick tick tick", [[], [], []]),
    Case(
        "replace keeps the generation: no new timeout",
        3,
        None,
        "+a tick tick =a tick",
        [[], [], ["a'"]],
    ),
    Case("no high water: never full", 2, None, "full +a +b +c full", [False, False]),
    Case(
        "full at high_water entries, room again after a remove",
        3,
        2,
        "full +a full +b full -a full",
        [False, False, True, False],
    ),
    Case(
        "room again after a tick expires entries",
        2,
        1,
        "+a full tick full tick full",
        [True, [], True, ["a"], False],
    ),
]


def run(case: Case) -> list[object]:
    gens: Generations[str, Item] = Generations(case.buckets, case.high_water)
    answers: list[object] = []
    for op in case.script.split():
        if op == "tick":
            answers.append([entry.name for _, entry in gens.tick()])
        elif op == "full":
            answers.append(gens.full())
        elif op == "renew":
            answers.append(gens.renew("a"))
        elif op[0] == "+":
            gens.insert(op[1:], Item(op[1:]))
        elif op[0] == "-":
            gens.remove(op[1:], gens.entries[op[1:]])
        elif op[0] == "=":
            gens.replace(op[1:], Item(op[1:] + "'"))
        else:
            raise AssertionError(f"unknown op {op!r}")
        check_invariants(gens)
    return answers


def check_invariants(gens: Generations[str, Item]) -> None:
    """Every entry sits in exactly the bucket of its generation, and no bucket holds others."""
    n = len(gens.buckets)
    for key, entry in gens.entries.items():
        assert gens.gen - n < entry.gen <= gens.gen, (key, entry.gen, gens.gen)
        assert gens.buckets[entry.gen % n].get(key) is entry
    assert sum(len(bucket) for bucket in gens.buckets) == len(gens)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_engine(case: Case) -> None:
    assert run(case) == case.answers


def test_tick_returns_keys_with_their_entries_and_forgets_them() -> None:
    gens: Generations[int, Item] = Generations(2)
    a, b = Item("a"), Item("b")
    gens.insert(1, a)
    gens.insert(2, b)
    assert gens.tick() == []
    assert gens.tick() == [(1, a), (2, b)]
    assert len(gens) == 0 and gens.gen == 2


def test_insert_sets_the_generation() -> None:
    gens: Generations[str, Item] = Generations(3)
    gens.tick()
    gens.tick()
    item = Item("a")
    gens.insert("a", item)
    assert item.gen == 2 == gens.gen


@pytest.mark.parametrize("buckets", [1, 0, -2, True, 2.5, "3", None])
def test_buckets_must_be_an_int_of_at_least_two(buckets: object) -> None:
    with pytest.raises(InvalidArgument, match="buckets must be an int from 2 to 1024"):
        Generations(buckets)  # type: ignore[arg-type]


@pytest.mark.parametrize("high_water", [0, -1, True, 1.5, "3"])
def test_high_water_must_be_a_positive_int_or_none(high_water: object) -> None:
    with pytest.raises(InvalidArgument, match="high_water must be an int >= 1 or None"):
        Generations(2, high_water)  # type: ignore[arg-type]
