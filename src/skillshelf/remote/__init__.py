"""Clients for sources on the network that are not git (an edge, like server/ and cli/: tests/test_architecture.py).

library/sources/ decides what a source is and checks every byte that arrives (remote.py there); these
modules only fetch: `index` an Agent Skills discovery index over HTTP, `mcp` another MCP server's Skills
extension over streamable HTTP with the official `mcp` client. `sources.register()` gives both to the source layer.
"""
