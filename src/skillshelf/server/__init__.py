"""MCP assembly: the server factory, the tools of each module, tool plumbing and transports."""

from skillshelf.server.app import build_server

__all__ = ["build_server"]
