"""The memory module: a project's running notes (decisions, hypotheses, blockers). MCP wiring is in tools.py."""
