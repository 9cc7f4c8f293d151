"""bench/ab.py starts the code it says it measures."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import anyio
import pytest
from mcp import StdioServerParameters

import skillshelf
from bench import ab, raw_stdio, run


def test_a_tree_variant_serves_the_checkout_this_interpreter_imports(tmp_path: Path) -> None:
    # Run from a worktree with PYTHONPATH=src, the venv's editable install points at another checkout: the
    # server must import the same skillshelf as the bench, not the one the install names.
    env = ab.server_env(ab.parse_variant("own=tree"), tmp_path)

    assert env["PYTHONPATH"] == str(Path(skillshelf.__file__).resolve().parents[1])


def test_a_git_variant_serves_its_snapshot(tmp_path: Path) -> None:
    variant = ab.parse_variant("before=git:0eb0afb")
    variant.src = tmp_path / "snap" / "src"

    assert ab.server_env(variant, tmp_path)["PYTHONPATH"] == str(tmp_path / "snap" / "src")


class Started(Exception):
    """Raised where a client would start its server: the command it was given is all the test needs."""


def test_both_clients_start_the_same_server_with_its_watcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The official client's server ran with the file watcher and the raw client's with --no-watch, so the two
    # clients measured different servers (issue 36, H78). Users run the watcher: both start that server.
    started: dict[str, list[str]] = {}

    def raw_server(command: list[str], _env: dict[str, str]) -> None:
        started["raw"] = command
        raise Started

    async def query_session(_lib: Path, _errlog: TextIO, _queries: object, params: StdioServerParameters) -> None:
        started["official"] = [params.command, *params.args]
        raise Started

    monkeypatch.setattr(raw_stdio, "RawServer", raw_server)
    monkeypatch.setattr(run, "query_session", query_session)
    variant, lib = ab.parse_variant("own=tree"), tmp_path / "lib-10"
    with pytest.raises(Started):
        ab.raw(variant, lib, tmp_path)
    with pytest.raises(Started), (tmp_path / "log").open("w") as errlog:
        anyio.run(ab.official, variant, lib, tmp_path, errlog, [])

    assert started["raw"] == started["official"] == ab.command(variant, lib)
    assert "--no-watch" not in started["raw"]
