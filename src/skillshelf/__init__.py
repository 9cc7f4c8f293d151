"""skillshelf: serve a filesystem library of reusable skills to AI agents over MCP."""

__version__ = "0.1.0"
