"""The patterns module: search, load and list skills. Plain services; MCP wiring is in tools.py."""
