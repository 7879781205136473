"""docs/api.md's tables of errors: every error class of the package is in the table of what
happened to the chain and what to do, and the table of what the write found is ``TOLD``."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import xor_ack_dynamodb
from xor_ack_dynamodb.dynamodb._core import told as T
from xor_ack_dynamodb.errors import XorAckError

API = Path(__file__).parents[2] / "docs" / "api.md"


def table(heading: str) -> list[list[str]]:
    """The rows (cells) of the first table under ``heading`` in docs/api.md."""
    text = API.read_text()
    section = text[text.index(heading) :]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # the header and its rule


def subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


def test_every_error_class_of_the_package_is_in_the_table() -> None:
    for module in pkgutil.walk_packages(xor_ack_dynamodb.__path__, "xor_ack_dynamodb."):
        importlib.import_module(module.name)  # every module, so every class is defined
    firsts = [re.sub(r"\([^)]*\)", "", row[0]) for row in table("### Every error")]  # no asides
    named = {name for cell in firsts for name in re.findall(r"`(\w+)`", cell)}
    defined = {cls.__name__ for cls in subclasses(XorAckError)}
    public = {name for name in defined if not name.startswith("_")}
    assert len(public) > 50  # the walk found the feature packages' errors too
    assert sorted(public - named) == []
    assert sorted(named - public) == []  # and the table names no error that is not one


FOUND = {
    "gone": T.Found.GONE,
    "acked": T.Found.ACKED,
    "failed by `fail()`": T.Found.FAILED,
    "failed by its deadline": T.Found.TIMED_OUT,
    "live past its deadline": T.Found.TIMED_OUT_HERE,
    "live when": T.Found.LIVE,
}
COLUMNS = {"stamp": 1, "touch": 1, "stamp_on": 2, "fail": 3, "wait": 4}


def test_the_table_of_what_the_write_found_is_the_cores() -> None:
    rows = table("### What the write found")
    seen = set()
    for row in rows:
        (found,) = [f for prefix, f in FOUND.items() if row[0].startswith(prefix)]
        for op, column in COLUMNS.items():
            told = T.TOLD.get((op, found))
            cell = row[column]
            if told is None:
                assert not re.search(r"`(\w+)`", cell), (op, found, cell)
                continue
            seen.add((op, found))
            if told == T.RETURNED:
                assert cell.startswith("returned"), (op, found, cell)
            else:
                first = re.search(r"`(\w+)`", cell)
                assert first and first.group(1) == told.__name__, (op, found, cell)  # type: ignore[union-attr]
    assert seen == set(T.TOLD)


def test_the_clients_errors_are_importable_from_the_errors_module() -> None:
    """The errors the clients' methods raise come from ``xor_ack_dynamodb.errors``, as
    api.md says: ``TableMismatch`` (``sweep``, ``list_chains``) was only in the table
    tools' module."""
    import xor_ack_dynamodb.errors as errors
    from xor_ack_dynamodb.dynamodb import table

    assert errors.TableMismatch is table.TableMismatch
    assert "TableMismatch" in errors.__all__
