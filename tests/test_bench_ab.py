"""bench/ab.py starts the code it says it measures."""

from __future__ import annotations

from pathlib import Path

import skillshelf
from bench import ab


def test_a_tree_variant_serves_the_checkout_this_interpreter_imports(tmp_path: Path) -> None:
    # Run from a worktree with PYTHONPATH=src, the venv's editable install points at another checkout: the
    # server must import the same skillshelf as the bench, not the one the install names.
    env = ab.server_env(ab.parse_variant("own=tree"), tmp_path)

    assert env["PYTHONPATH"] == str(Path(skillshelf.__file__).resolve().parents[1])


def test_a_git_variant_serves_its_snapshot(tmp_path: Path) -> None:
    variant = ab.parse_variant("before=git:0eb0afb")
    variant.src = tmp_path / "snap" / "src"

    assert ab.server_env(variant, tmp_path)["PYTHONPATH"] == str(tmp_path / "snap" / "src")
