"""The SDK at one seam: server/sdk.py touches exactly the private names it declares, and no other module
touches any private name of another object (so an SDK upgrade is one file to read)."""

from __future__ import annotations

import ast
from pathlib import Path

from skillshelf.server import sdk

SRC = Path(__file__).resolve().parents[2] / "src" / "skillshelf"
SEAM = SRC / "server" / "sdk.py"
# Private names of the standard library that are its documented API.
STANDARD = {("os", "_exit")}


def private_uses(path: Path) -> set[tuple[str, str]]:
    """(receiver, name) for every `x._name` where x is not self, cls or super(); private module imports too."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            receiver = ast.unparse(node.value)
            if receiver not in ("self", "cls", "super()"):
                found.add((receiver, node.attr))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mcp"):
            private = [part for part in node.module.split(".") if part.startswith("_")]
            found |= {(node.module, part) for part in private}
    return found


def test_the_seam_touches_exactly_the_private_names_it_declares() -> None:
    assert {name for _receiver, name in private_uses(SEAM)} == sdk.PRIVATE_NAMES


def test_no_other_module_touches_a_private_name() -> None:
    offenders = {
        str(path.relative_to(SRC)): sorted(uses)
        for path in SRC.rglob("*.py")
        if path != SEAM and (uses := private_uses(path) - STANDARD)
    }
    assert not offenders, f"private names used outside server/sdk.py: {offenders}"


def test_the_check_sees_a_private_use(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(server):\n    return server._tool_manager._tools\n", encoding="utf-8")
    assert private_uses(sample) == {("server", "_tool_manager"), ("server._tool_manager", "_tools")}
