"""Writes as structured values, rendered to DynamoDB's expressions in one place.

The core builds each write as an :class:`Update` (or a :class:`Delete`): the
attributes it sets, increments and removes, and its condition as a conjunction
of small typed terms.  :meth:`Update.request` renders it as ``UpdateItem``
parameters (also a ``TransactWriteItems`` action) and :meth:`Update.statement`
as the PartiQL ``UPDATE`` of ``BatchExecuteStatement``; nothing parses an
expression back.  Placeholders are stable and short (``#s`` is ``stamp``,
values are named by the core: ``:now``, ``:old``, ...) so requests stay small
and readable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .. import item as I

#: A low-level DynamoDB attribute value: ``{"N": "3"}``, ``{"B": b"..."}``, ...
AttributeValue: TypeAlias = dict[str, Any]

#: The expression placeholder of each attribute of the item; the key is ``#pk``.
PLACEHOLDERS = {
    I.STAMP: "#s",
    I.CHAIN_ID: "#c",
    I.VERSION: "#v",
    I.TOKENS: "#t",
    I.CREATED_AT: "#ca",
    I.UPDATED_AT: "#u",
    I.ACKED_AT: "#a",
    I.FAILED_AT: "#f",
    I.REASON: "#r",
    I.EXPIRES_AT: "#e",
    I.DEADLINE: "#d",
    I.IDLE_TIMEOUT: "#i",
    I.OPEN_SHARD: "#os",
    I.DUE_AT: "#due",
    I.FAILED_SHARD: "#fs",
}


@dataclass(frozen=True)
class Value:
    """A value of a request, under its placeholder (one placeholder, one value)."""

    name: str
    value: AttributeValue


@dataclass(frozen=True)
class Compare:
    """``attribute <op> value``; with ``size``: ``size(attribute) <op> value``."""

    attribute: str
    op: Literal["=", "<>", "<", "<=", ">", ">="]
    value: Value
    size: bool = False


@dataclass(frozen=True)
class Exists:
    """``attribute_exists(attribute)``, or ``attribute_not_exists`` when ``present`` is False.

    With ``type`` (``{"S": "N"}`` and the like): the attribute exists and has that
    type, ``attribute_type(attribute, type)``.
    """

    attribute: str
    present: bool = True
    type: Value | None = None


@dataclass(frozen=True)
class AnyOf:
    """At least one of ``terms`` holds."""

    terms: tuple[Term, ...]


@dataclass(frozen=True)
class Not:
    """``term`` does not hold."""

    term: Term


Term: TypeAlias = Compare | Exists | AnyOf | Not


class _Names:
    """The placeholders one request uses, in order of use.

    Every request renders here, so :meth:`assign` and :meth:`names_of` note names
    and values inline rather than through :meth:`name` and :meth:`value` (the same
    rules, fewer calls per request).
    """

    __slots__ = ("key", "names", "values")

    def __init__(self, key: str) -> None:
        self.key = key
        self.names: dict[str, str] = {}
        self.values: dict[str, AttributeValue] = {}

    def name(self, attribute: str) -> str:
        placeholder = "#pk" if attribute == self.key else PLACEHOLDERS[attribute]
        self.names[placeholder] = attribute
        return placeholder

    def value(self, value: Value) -> str:
        name, held = value.name, value.value
        known = self.values.setdefault(name, held)
        if known is not held and known != held:
            raise ValueError(f"placeholder {name} holds two values")
        return name

    def assign(self, pairs: Sequence[tuple[str, Value]]) -> list[str]:
        """``#name = :value`` for each ``(attribute, value)``, as :meth:`name` and :meth:`value`."""
        key, names, values = self.key, self.names, self.values
        out = []
        for attribute, value in pairs:
            placeholder = "#pk" if attribute == key else PLACEHOLDERS[attribute]
            names[placeholder] = attribute
            name, held = value.name, value.value
            known = values.setdefault(name, held)
            if known is not held and known != held:
                raise ValueError(f"placeholder {name} holds two values")
            out.append(f"{placeholder} = {name}")
        return out

    def names_of(self, attributes: Sequence[str]) -> list[str]:
        """The placeholders of ``attributes``, as :meth:`name`."""
        key, names = self.key, self.names
        out = []
        for attribute in attributes:
            placeholder = "#pk" if attribute == key else PLACEHOLDERS[attribute]
            names[placeholder] = attribute
            out.append(placeholder)
        return out

    def term(self, term: Term, nested: bool = False) -> str:
        if isinstance(term, Compare):
            name = self.name(term.attribute)
            operand = f"size({name})" if term.size else name
            return f"{operand} {term.op} {self.value(term.value)}"
        if isinstance(term, Exists):
            if term.type is not None:
                return f"attribute_type({self.name(term.attribute)}, {self.value(term.type)})"
            verb = "attribute_exists" if term.present else "attribute_not_exists"
            return f"{verb}({self.name(term.attribute)})"
        if isinstance(term, Not):
            return f"NOT {self.term(term.term, nested=True)}"
        text = " OR ".join([self.term(t, nested=True) for t in term.terms])
        return f"({text})" if nested else text

    def condition(self, terms: Sequence[Term]) -> str:
        nested = len(terms) > 1
        return " AND ".join([self.term(t, nested) for t in terms])


def _quote(identifier: str) -> str | None:
    """``"name"`` for PartiQL; None for a name it could not take quoted as it is."""
    if not identifier or '"' in identifier:
        return None
    return f'"{identifier}"'


@dataclass(frozen=True)
class Update:
    """One conditional write of one item: what it sets, increments, removes, and its condition.

    ``increment`` renders as ``SET #v = #v + :one`` (an arithmetic SET, not an ADD
    clause: the attribute must exist, which the condition says).
    """

    table: str
    key: dict[str, AttributeValue]
    set: tuple[tuple[str, Value], ...] = ()
    increment: tuple[tuple[str, Value], ...] = ()
    remove: tuple[str, ...] = ()
    condition: tuple[Term, ...] = ()
    return_values: str | None = None
    on_condition_failure: str | None = "ALL_OLD"

    @property
    def key_name(self) -> str:
        (name,) = self.key
        return name

    def request(self) -> dict[str, Any]:
        """The ``UpdateItem`` parameters (also a transaction's ``Update``, without ReturnValues)."""
        names = _Names(self.key_name)
        parts = names.assign(self.set)
        for attribute, value in self.increment:
            name = names.name(attribute)
            parts.append(f"{name} = {name} + {names.value(value)}")
        expression = "SET " + ", ".join(parts)
        if self.remove:
            expression += " REMOVE " + ", ".join(names.names_of(self.remove))
        params: dict[str, Any] = {
            "TableName": self.table,
            "Key": self.key,
            "UpdateExpression": expression,
        }
        if self.condition:
            params["ConditionExpression"] = names.condition(self.condition)
        params["ExpressionAttributeNames"] = names.names
        params["ExpressionAttributeValues"] = names.values
        if self.return_values is not None:
            params["ReturnValues"] = self.return_values
        if self.on_condition_failure is not None:
            params["ReturnValuesOnConditionCheckFailure"] = self.on_condition_failure
        return params

    def statement(self) -> dict[str, Any] | None:
        """The PartiQL ``UPDATE`` of this write, or None where it has no such form.

        The form covers plain assignments, removals, and a condition of comparisons
        (``=``, ``<``, ...) and ``attribute_exists``; an increment, a function or an
        OR stays an ``UpdateItem``, as does a name PartiQL cannot quote.
        """
        table = _quote(self.table)
        quoted = {a: _quote(a) for a in [*(a for a, _ in self.set), *self.remove, *self.key]}
        if self.increment or table is None or None in quoted.values():
            return None
        where: list[tuple[str, str, Value | None]] = [
            (a, "=", Value(a, v)) for a, v in self.key.items()
        ]
        for term in self.condition:
            if isinstance(term, Compare) and not term.size and _quote(term.attribute):
                where.append((term.attribute, term.op, term.value))
            elif (
                isinstance(term, Exists)
                and term.present
                and not term.type
                and _quote(term.attribute)
            ):
                where.append((term.attribute, "exists", None))
            else:
                return None
        clauses = [f"SET {quoted[a]} = ?" for a, _ in self.set]
        clauses += [f"REMOVE {quoted[a]}" for a in self.remove]
        conditions = [
            f"attribute_exists({_quote(a)})" if op == "exists" else f"{_quote(a)} {op} ?"
            for a, op, _ in where
        ]
        statement: dict[str, Any] = {
            "Statement": f"UPDATE {table} {' '.join(clauses)} WHERE {' AND '.join(conditions)}",
            "Parameters": [v.value for _, v in self.set]
            + [v.value for _, _, v in where if v is not None],
        }
        if self.on_condition_failure is not None:
            statement["ReturnValuesOnConditionCheckFailure"] = self.on_condition_failure
        return statement

    def insert(self) -> dict[str, Any] | None:
        """The PartiQL ``INSERT`` that writes this update on an absent item, or None.

        Only for a write whose condition lets an absent item through
        (an ``attribute_not_exists`` in each term, alone or in an OR: a create): the item is
        the key and the SET values.  ``INSERT`` is stricter than the condition: any
        item under the key refuses it (``DuplicateItem``), so it never overwrites
        one, where the ``UpdateItem`` would also replace a closed chain.
        """
        if self.increment or not self._allows_absent():
            return None
        table = _quote(self.table)
        names = [*self.key, *(a for a, _ in self.set)]
        if table is None or any(not n or "'" in n for n in names) or len(set(names)) != len(names):
            return None
        fields = ", ".join(f"'{name}': ?" for name in names)
        return {
            "Statement": f"INSERT INTO {table} VALUE {{{fields}}}",
            "Parameters": [*self.key.values(), *(v.value for _, v in self.set)],
        }

    def _allows_absent(self) -> bool:
        """Does the condition hold for an absent item (``attribute_not_exists(key)``)?"""

        def absent(term: Term) -> bool:  # an absent item has no attribute at all
            if isinstance(term, Exists):
                return not term.present and term.type is None
            return isinstance(term, AnyOf) and any(absent(t) for t in term.terms)

        return bool(self.condition) and all(absent(term) for term in self.condition)


@dataclass(frozen=True)
class Delete:
    """One conditional ``DeleteItem``."""

    table: str
    key: dict[str, AttributeValue]
    condition: tuple[Term, ...] = ()

    def request(self) -> dict[str, Any]:
        names = _Names(next(iter(self.key)))
        params: dict[str, Any] = {"TableName": self.table, "Key": self.key}
        if self.condition:
            params["ConditionExpression"] = names.condition(self.condition)
            params["ExpressionAttributeNames"] = names.names
            if names.values:
                params["ExpressionAttributeValues"] = names.values
        return params


@dataclass(frozen=True)
class Query:
    """One page of a ``Query`` on an index: its key condition as terms (ANDed)."""

    table: str
    index: str
    key: tuple[Term, ...]
    limit: int
    start: dict[str, AttributeValue] | None = None

    def request(self, partition_key: str) -> dict[str, Any]:
        names = _Names(partition_key)
        params: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": self.index,
            "KeyConditionExpression": names.condition(self.key),
            "ExpressionAttributeNames": names.names,
            "ExpressionAttributeValues": names.values,
            "Limit": self.limit,
        }
        if self.start is not None:
            params["ExclusiveStartKey"] = self.start
        return params
