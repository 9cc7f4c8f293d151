"""The `skillshelf` command line: `main.py` holds the group and the library commands, `serve.py` the
server, `common.py` what every command shares; the other modules add their command groups."""

from skillshelf.cli.authoring import doc, new
from skillshelf.cli.call_log import call_log
from skillshelf.cli.config import COMMANDS as CONFIG_COMMANDS
from skillshelf.cli.db import db
from skillshelf.cli.evals import evaluate
from skillshelf.cli.history import COMMANDS as HISTORY_COMMANDS
from skillshelf.cli.install import COMMANDS as INSTALL_COMMANDS
from skillshelf.cli.main import cli, main
from skillshelf.cli.model import model
from skillshelf.cli.publish import export
from skillshelf.cli.scan import scan
from skillshelf.cli.serve import serve
from skillshelf.cli.sources import COMMANDS as SOURCE_COMMANDS
from skillshelf.cli.tokens import token
from skillshelf.remote.sources import register as register_remote_clients

cli.add_command(serve)
cli.add_command(token)
cli.add_command(call_log)
cli.add_command(model)
cli.add_command(new)
cli.add_command(doc)
cli.add_command(db)
cli.add_command(scan)
cli.add_command(evaluate)
cli.add_command(export)

for _command in (*CONFIG_COMMANDS, *SOURCE_COMMANDS, *INSTALL_COMMANDS, *HISTORY_COMMANDS):
    cli.add_command(_command)

register_remote_clients()  # `add` of an index or mcp+https source: the clients live outside library/

__all__ = ["cli", "main"]
