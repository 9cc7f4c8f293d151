"""The `skillshelf` command line: `main.py` holds the group and the core commands; other modules of
this package add their command groups to it."""

from skillshelf.cli.call_log import call_log
from skillshelf.cli.config import COMMANDS as CONFIG_COMMANDS
from skillshelf.cli.main import cli, main
from skillshelf.cli.model import model
from skillshelf.cli.tokens import token

cli.add_command(token)
cli.add_command(call_log)
cli.add_command(model)

for _command in CONFIG_COMMANDS:
    cli.add_command(_command)

__all__ = ["cli", "main"]
