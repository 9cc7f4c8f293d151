"""Reading the project's source for the boundary tests: what a name in a module really is.

The boundary tests (tests/test_boundary.py, tests/server/test_sdk_seam.py) judge a call or an attribute
by what it refers to, not by how it is spelt: `Imports` resolves a local name through the module's
imports (`from zipfile import ZipFile as Z` makes `Z` `zipfile.ZipFile`), and `sdk_classes` finds every
class of the project that derives from an SDK class, through the project's own classes too.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "skillshelf"


def module_name(path: Path) -> str:
    """`skillshelf.server.tooling` for src/skillshelf/server/tooling.py."""
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Imports:
    """A module's names as what they refer to: imported names by their qualified name, the module's own
    classes as `module.Class`."""

    def __init__(self, tree: ast.AST, module: str = "sample") -> None:
        self.names: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.names[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, module)
                for alias in node.names:
                    self.names[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.ClassDef) and node.name not in self.names:
                self.names[node.name] = f"{module}.{node.name}"

    def qualified(self, expr: ast.expr) -> str | None:
        """`zipfile.ZipFile` for `ZipFile`, `zipfile.ZipFile` or an alias of either; None for anything
        that is not a dotted name (a call's result, a subscript)."""
        if isinstance(expr, ast.Name):
            return self.names.get(expr.id, expr.id)
        if isinstance(expr, ast.Attribute):
            owner = self.qualified(expr.value)
            return None if owner is None else f"{owner}.{expr.attr}"
        return None

    def mentions(self, annotation: ast.expr | None, wanted: frozenset[str]) -> bool:
        """Whether a type annotation names one of `wanted` (qualified), in a union or Optional too."""
        if annotation is None:
            return False
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            return self.mentions(ast.parse(annotation.value, mode="eval").body, wanted)
        return any(
            self.qualified(node) in wanted
            for node in ast.walk(annotation)
            if isinstance(node, ast.Name | ast.Attribute)
        )


def _absolute(node: ast.ImportFrom, module: str) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".")[: -node.level]
    return ".".join([*package, *([node.module] if node.module else [])])


@functools.cache
def parsed(path: Path) -> ast.Module:
    """`path`'s syntax tree, parsed once per worker and shared: the boundary and architecture checks each
    walk every module of src/ (0.8 s of parsing a time), and none changes a tree."""
    return ast.parse(path.read_text(encoding="utf-8"))


def source_modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield module_name(path), path, parsed(path)


@dataclass(frozen=True)
class ProjectClass:
    node: ast.ClassDef
    bases: tuple[str, ...]  # qualified


def sdk_classes(modules: list[tuple[str, ast.Module]], sdk_prefix: str = "mcp.") -> dict[str, ProjectClass]:
    """The project's classes (by qualified name) that derive from an SDK class, directly or through
    another class of the project."""
    classes: dict[str, ProjectClass] = {}
    for module, tree in modules:
        imports = Imports(tree, module)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = tuple(name for base in node.bases if (name := imports.qualified(_generic(base))) is not None)
                classes[f"{module}.{node.name}"] = ProjectClass(node, bases)
    derived: dict[str, ProjectClass] = {}
    changed = True
    while changed:
        changed = False
        for name, found in classes.items():
            if name not in derived and any(b.startswith(sdk_prefix) or b in derived for b in found.bases):
                derived[name] = found
                changed = True
    return derived


def _generic(base: ast.expr) -> ast.expr:
    """The class a base names: `Server` for `Server[Any]` (a generic class's parametrised form)."""
    return base.value if isinstance(base, ast.Subscript) else base


def chain_names(name: str, derived: dict[str, ProjectClass]) -> set[str]:
    """What the project's own classes in a derived class's chain define (`own_names` of each)."""
    found = derived[name]
    names = own_names(found.node)
    for base in found.bases:
        if base in derived:
            names |= chain_names(base, derived)
    return names


def own_names(node: ast.ClassDef) -> set[str]:
    """Names a class defines itself: its methods and class attributes, and every `self.x = ...`."""
    found: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(item.name)
        elif isinstance(item, ast.Assign):
            found |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            found.add(item.target.id)
    for inner in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(inner, ast.Assign):
            targets = inner.targets
        elif isinstance(inner, ast.AnnAssign | ast.AugAssign):
            targets = [inner.target]
        found |= {
            t.attr
            for t in targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        }
    return found
