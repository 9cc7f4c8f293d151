"""The skillshelf benchmark: a synthetic library generator (generate.py) and an MCP driver (run.py)."""
