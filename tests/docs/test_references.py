"""Every test the docs name (``tests/x.py::test_name``) exists, so a doc row cannot outlive it."""

from __future__ import annotations

import ast
import re

import pytest

from .blocks import ROOT

REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FOUND = [
    (doc.relative_to(ROOT).as_posix(), path, name)
    for doc in DOCS
    for path, name in REFERENCE.findall(doc.read_text(encoding="utf-8"))
]


def _functions(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_the_docs_name_tests() -> None:
    assert len(FOUND) >= 5  # docs/bad-input.md's command-line rows at least


@pytest.mark.parametrize(("doc", "path", "name"), FOUND, ids=[f"{d}:{n}" for d, _, n in FOUND])
def test_a_named_test_exists(doc: str, path: str, name: str) -> None:
    assert (ROOT / path).is_file(), f"{doc} names {path}, which does not exist"
    assert name in _functions(path), f"{doc} names {path}::{name}, which does not exist"
