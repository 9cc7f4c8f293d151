"""The layers hold: domain and library code import nothing from MCP or the server, and no cycles.

An import graph read from the source (AST), not from what happens to be loaded: a lazy import
inside a function counts as much as one at the top, since it is a dependency all the same.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.source_analysis import parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "skillshelf"
# The edges of the system: they may import anything. Everything else is core.
# remote: the network clients of the non-git sources (the MCP client among them), given to library/sources.
EDGES = frozenset({"server", "cli", "__main__", "remote"})
FORBIDDEN_IN_CORE = ("mcp", "starlette", "uvicorn", "skillshelf.server", "skillshelf.cli")


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def imports_of(path: Path, module: str) -> set[str]:
    """Every module this file imports, relative imports resolved."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def package_of(module: str) -> str:
    """`skillshelf.library.index.store` -> `library`; top-level modules are their own package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def is_core(module: str) -> bool:
    return package_of(module) not in EDGES


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Every module of src/ and what it imports: read when a test first asks, not at collection, where each
    worker would read all of src/ (a second of CPU) whether or not it runs any test of this module."""
    return {name: imports_of(path, name) for name, path in modules()}


@pytest.mark.parametrize("module", sorted(name for name, _path in modules() if is_core(name)))
def test_core_modules_import_nothing_from_mcp_or_the_edges(module: str) -> None:
    bad = sorted(i for i in import_graph()[module] if any(i == f or i.startswith(f + ".") for f in FORBIDDEN_IN_CORE))
    assert not bad, f"{module} imports {bad}: domain and library code must stay free of MCP and the server"


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        source = package_of(module)
        targets = {package_of(i) for i in imported if i.startswith("skillshelf.") and i in import_graph()}
        graph.setdefault(source, set()).update(t for t in targets if t != source)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle as a path of packages, or None (depth-first search with colours)."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if colour.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in colour and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        colour[node] = 2
        return None

    for node in sorted(graph):
        if node not in colour and (cycle := visit(node)):
            return cycle
    return None


def test_packages_form_no_import_cycle() -> None:
    cycle = find_cycle(package_graph())
    assert cycle is None, "package import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The check above must be able to fail.
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def module_graph() -> dict[str, set[str]]:
    """Module -> the modules it names in an import (`from pkg import name` names `pkg`, whose __init__ runs)."""
    graph = import_graph()
    return {module: {i for i in imported if i in graph and i != module} for module, imported in graph.items()}


def test_modules_form_no_import_cycle_even_through_lazy_imports() -> None:
    cycle = find_cycle(module_graph())
    assert cycle is None, "module import cycle (a function-level import counts too): " + " -> ".join(cycle or [])


def test_the_forbidden_import_check_sees_lazy_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from mcp.types import Tool\n    from .sibling import x\n", encoding="utf-8")
    found = imports_of(sample, "skillshelf.library.sample")
    assert "mcp.types" in found
    assert "skillshelf.library.sibling" in found


def library_part_graph() -> dict[str, set[str]]:
    """library's subpackages (skill, index, indexing, semantic, usage, access, sources; db and the rest as
    modules) -> the ones they import."""

    def part(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["skillshelf", "library"] else None

    graph: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        source = part(module)
        if source is None:
            continue
        targets = {target for i in imported if i in import_graph() and (target := part(i)) is not None}
        graph.setdefault(source, set()).update(targets - {source})
    return graph


def test_the_library_subpackages_form_no_import_cycle() -> None:
    # index uses usage and semantic; so those two must not reach back into index (the shared SQLite
    # helpers live in library.db, below all three).
    graph = library_part_graph()
    assert {"skill", "index", "indexing", "semantic", "usage", "access", "sources", "db"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "library subpackage import cycle: " + " -> ".join(cycle or [])


def test_generic_indexing_sits_below_the_skill_index_and_the_session_archive() -> None:
    # library/indexing/ (the FTS file, background sync, watcher, parallel parsing, cache folders, the words)
    # is what the skill index and the session archive share; neither reaches the other through it (issue 32).
    def reaching(prefix: str, targets: tuple[str, ...]) -> list[str]:
        return sorted(
            f"{module} imports {target}"
            for module, imported in import_graph().items()
            if module.startswith(prefix)
            for target in imported
            if any(target == t or target.startswith(t + ".") for t in targets)
        )

    assert reaching("skillshelf.library.indexing", ("skillshelf.library.index", "skillshelf.artifacts")) == []
    assert reaching("skillshelf.artifacts", ("skillshelf.library.index",)) == []


# -- one composition root ----------------------------------------------------------------------------
# What only the root (server/app.py `App`) constructs: the application's parts and its servers.
ROOT = "skillshelf.server.app"
BUILT_BY_THE_ROOT = frozenset(
    {
        "SkillLibrary",
        "SessionArchive",
        "LibraryReader",
        "ViewReader",
        "ViewServer",
        "MCPServer",
        "assemble",
        "open_stores",
    }
)
# Modules outside the root that may construct one, and why.
BUILT_ELSEWHERE: dict[str, set[str]] = {
    "skillshelf.server.assembly": {"ViewServer"},  # one view's server, assembled for the root (its only caller)
    "skillshelf.skills.review_evals": {"LibraryReader"},  # reads the words-only library its caller's App opened
    "skillshelf.settings": {"open_stores"},  # LibraryConfig.open_usage: the library is given the opener
    "skillshelf.server.calllog": {"open_stores"},  # the call log `skillshelf log` reads, without an App
}


def constructed(path: Path) -> set[str]:
    """The root's names this file calls, however it names them (`Name(...)`, an alias, `module.Name(...)`)."""
    tree = parsed(path)
    local = {name: name for name in BUILT_BY_THE_ROOT}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            local.update({alias.asname: alias.name for alias in node.names if alias.asname and alias.name in local})
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id in local:
            found.add(local[node.func.id])
        elif isinstance(node.func, ast.Attribute) and node.func.attr in BUILT_BY_THE_ROOT:
            found.add(node.func.attr)
    return found


def test_only_the_composition_root_constructs_the_library_readers_stores_and_servers() -> None:
    wrong = {
        module: sorted(extra)
        for module, path in modules()
        if module != ROOT and not module.startswith("skillshelf.state")
        if (extra := constructed(path) - BUILT_ELSEWHERE.get(module, set()))
    }
    assert wrong == {}, f"construct these through server/app.py App (docs/architecture.md): {wrong}"
    stale = {m: sorted(gone) for m, p in modules() if (gone := BUILT_ELSEWHERE.get(m, set()) - constructed(p))}
    assert stale == {}, f"BUILT_ELSEWHERE lists what these no longer construct: {stale}"


def test_the_root_check_sees_aliases_and_attributes(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from skillshelf.library.index.library import SkillLibrary as Shelf\n"
        "import skillshelf.server.assembly as assembly\n"
        "def f(config, parts, serving):\n"
        "    Shelf(config)\n"
        "    assembly.assemble(parts, serving)\n",
        encoding="utf-8",
    )
    assert constructed(sample) == {"SkillLibrary", "assemble"}
