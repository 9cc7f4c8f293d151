"""The metrics module: library health, pattern reuse and session compression. No MCP here: the tools are
server/tools/metrics.py."""
