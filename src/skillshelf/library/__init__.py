"""The skill library: discovery, parsing, quality and the search index. No MCP here."""
