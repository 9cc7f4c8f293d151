"""The patterns module: search, load and list skills. Plain services; the MCP tools are server/tools/patterns.py."""
