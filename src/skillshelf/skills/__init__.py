"""The skill service: search, load and list skills. Plain services; the MCP tools are server/tools/skills.py."""
