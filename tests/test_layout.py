"""The package's layout holds what docs/design.md ("Layout") says of it.

The import contract itself (layers, no upward import, the two trackers apart) is
import-linter's, run by ``make lint``; this checks what the contract does not.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "xor_ack_dynamodb"
APPS = ("cli", "pipeline", "dashboard")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, exclude_type_checking_imports=True)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back(graph: grimp.ImportGraph) -> None:
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert cycles(edges) == []


def test_apps_use_only_the_public_modules_of_the_parts_below(graph: grimp.ImportGraph) -> None:
    private = []
    for module in sorted(graph.modules):
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in APPS:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            there = imported.split(".")  # the package itself: its public names
            if there[1:2] != parts[1:2] and any(p.startswith("_") for p in there[1:]):
                private.append(f"{module} -> {imported}")
    assert private == []


def test_every_folder_says_what_it_holds_and_may_import() -> None:
    for init in sorted((ROOT / PACKAGE).rglob("__init__.py")):
        if init.parent == ROOT / PACKAGE:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc, f"{init.relative_to(ROOT)} has no docstring"
        assert "import" in doc.lower(), f"{init.relative_to(ROOT)}: what may it import?"


def test_the_top_level_holds_public_modules_and_one_folder_per_part() -> None:
    top = ROOT / PACKAGE
    private = sorted(p.name for p in top.glob("_*.py") if p.name != "__init__.py")
    assert private == []
    folders = sorted(p.name for p in top.iterdir() if (p / "__init__.py").exists())
    assert set(folders) <= {
        "cli",
        "dashboard",
        "dynamodb",
        "errors",
        "events",
        "fleet",
        "memory",
    } | {
        "pipeline",
        "spark",
    }


def test_the_diagram_in_the_design_doc_matches_the_imports() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "layout.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


#: What the repository's root holds, tracked: a new entry is a decision, made here.
ROOT_ENTRIES = {
    ".ci", ".gitignore", "LICENSE", "Makefile", "README.md", "benchmarks", "docker-compose.yml",
    "docs", "infra", "pyproject.toml", "scripts", "tests", "xor_ack_dynamodb",
}  # fmt: skip


def test_the_repository_root_tracks_only_the_project_s_own_entries() -> None:
    """Spark checkpoints of relative paths ('5', 'relative-cp': the JVM resolves them in its
    working directory, the repository) were committed with the work of a stop."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    tracked = {name.split(b"/", 1)[0].decode() for name in listed.stdout.split(b"\0") if name}
    assert tracked <= ROOT_ENTRIES, sorted(tracked - ROOT_ENTRIES)
