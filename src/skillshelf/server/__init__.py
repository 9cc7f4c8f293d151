"""MCP assembly: the server factory (`app.build_server`), the call pipeline, the tools of each module,
the SDK seam and the transports. Nothing is imported here, so a module of this package importing a
sibling never runs the factory's imports (no hidden import cycles; tests/test_architecture.py)."""
