"""The MCP adapters of each domain module: validate, call the service, wrap in the envelope."""
