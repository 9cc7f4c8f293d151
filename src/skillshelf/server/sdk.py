"""The one seam to the MCP SDK's private state: every use of a name the SDK does not make public is here.

skillshelf reaches one private name of `MCPServer` (mcp 2.3.x): `_lowlevel_server`, the low-level server
under it, because MCPServer offers no public handle on it (the SDK's own in-memory client reaches it the
same way, marked "TODO: make lowlevel_server public"). Everything done with it is the low-level server's
public API:

- `run` over streams skillshelf wraps (server/stdio.py: the bound on unanswered requests);
  `MCPServer.run_stdio_async` opens its own stdio streams and takes none;
- `add_request_handler` for spec methods MCPServer serves from tables it cannot change while it runs or
  hold skillshelf's objects in: `tools/list` and `tools/call` (a view's tools, replaced on a config
  reload: server/views.py `LiveView`), `resources/list` and `resources/read` (the skills' files:
  server/skills_ext.py). An `Extension` may bind only new methods, and `Server.middleware` that answers
  a request itself skips the SDK's shaping of the result for the client's protocol version;
- `instructions`, which a config reload changes (MCPServer's property is read-only);
- `get_tool_input_schema`, so the SDK checks `Mcp-Param-*` headers against the tool the view serves.

An SDK upgrade is this file to read: tests/server/test_sdk_seam.py checks that it touches exactly
`PRIVATE_NAMES`, that no other module touches any private name, and that no class of the project
overrides a method of an SDK class other than an extension point it offers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.extension import RequestHandler
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp_types.methods import SPEC_CLIENT_METHODS
from pydantic import BaseModel

PRIVATE_NAMES = frozenset({"_lowlevel_server"})


def lowlevel(server: MCPServer[Any]) -> Server[Any]:
    """The low-level server under an MCPServer: its public `run`, handlers and attributes."""
    return server._lowlevel_server


def serve_request(server: MCPServer[Any], method: str, params: type[BaseModel], handler: RequestHandler) -> None:
    """Answer `method` with `handler` (a spec method's handler replaced: see the module docstring)."""
    lowlevel(server).add_request_handler(method, params, handler)


def set_instructions(server: MCPServer[Any], text: str) -> None:
    lowlevel(server).instructions = text


def set_tool_schemas(server: MCPServer[Any], schema_of: Callable[[str], Mapping[str, Any] | None]) -> None:
    lowlevel(server).get_tool_input_schema = schema_of


def request_methods(server: MCPServer[Any], also: tuple[str, ...] = ()) -> list[str]:
    """Every request method of the protocol, and of `also` (extension methods), the server has a handler
    for (the call pipeline must classify each)."""
    server_side = lowlevel(server)
    return sorted(m for m in {*SPEC_CLIENT_METHODS, *also} if server_side.get_request_handler(m) is not None)
