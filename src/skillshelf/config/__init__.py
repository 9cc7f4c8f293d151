"""Configuration models for the serving layer (views, access, hooks, composites, the call log).

Pure data: the server and the CLI read them; nothing here imports the MCP SDK.
"""
