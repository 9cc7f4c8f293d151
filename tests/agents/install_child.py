"""The child process of tests/agents/test_install.py's concurrent installs: a module of its own so that a
spawned child imports the CLI alone (1.5 s of CPU less each than importing the test module, which
brings pytest, tests/conftest.py and the MCP SDK)."""

from __future__ import annotations

import sys
from multiprocessing.synchronize import Event

from click.testing import CliRunner

from skillshelf.cli import cli

WAIT_S = 60.0


def install_for(agent: str, library: str, go: Event) -> None:
    """A real `skillshelf install` in a process of its own, started when `go` is set."""
    go.wait(WAIT_S)
    sys.exit(CliRunner().invoke(cli, ["install", "--agent", agent, "-l", library]).exit_code)
