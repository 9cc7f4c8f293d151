"""The memory module: a project's running notes (decisions, hypotheses, blockers). The MCP tools are
server/tools/memory.py."""
