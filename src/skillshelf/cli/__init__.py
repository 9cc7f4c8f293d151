"""The `skillshelf` command line: `main.py` holds the group and the core commands; other modules of
this package add their command groups to it."""

from skillshelf.cli.main import cli, main

__all__ = ["cli", "main"]
