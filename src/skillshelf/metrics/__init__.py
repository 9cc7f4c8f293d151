"""The metrics module: library health, pattern reuse and session compression. No MCP here but tools.py."""
