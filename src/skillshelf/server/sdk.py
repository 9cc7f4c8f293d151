"""The one seam to the MCP SDK's private state: every use of a name the SDK does not make public is here.

skillshelf needs four things `MCPServer` (mcp 2.3.x) has no public way to do: replace the tool table
when a view is reloaded, register a tool object it built itself (a view's presentation of a tool, a
composite), change the instructions after the server is built, and reach the low-level server (to
replace the `resources/list` and `resources/read` handlers, and to run it over stdio with a bound on
unanswered requests). An SDK upgrade is this file to read: tests/server/test_sdk_seam.py lists exactly which
private names it touches, and proves no other module touches any.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools.base import Tool

PRIVATE_NAMES = frozenset({"_tool_manager", "_tools", "_lowlevel_server", "_request_handlers"})


def registered_tools(server: MCPServer[Any]) -> list[Tool]:
    """The tool objects the server calls, as registered (the public `list_tools` gives wire models)."""
    return list(server._tool_manager._tools.values())


def get_tool(server: MCPServer[Any], name: str) -> Tool | None:
    return server._tool_manager._tools.get(name)


def add_tool(server: MCPServer[Any], tool: Tool) -> None:
    """Register a tool object as it is (`MCPServer.add_tool` takes a function and builds its own)."""
    server._tool_manager._tools[tool.name] = tool


def replace_tools(server: MCPServer[Any], tools: list[Tool]) -> None:
    """Serve exactly `tools` from now on (one assignment: a request sees the old table or the new one)."""
    server._tool_manager._tools = {tool.name: tool for tool in tools}


def set_instructions(server: MCPServer[Any], text: str) -> None:
    server._lowlevel_server.instructions = text


def lowlevel(server: MCPServer[Any]) -> Server[Any]:
    """The low-level server under an MCPServer (its request handlers and `run`)."""
    return server._lowlevel_server


def request_methods(server: MCPServer[Any]) -> list[str]:
    """Every request method the server has a handler for (the call pipeline must classify each)."""
    return sorted(server._lowlevel_server._request_handlers)
