"""The one seam to the MCP SDK's server layer: what skillshelf builds its servers from, all of it public.

A view's server is the SDK's low-level `Server` (mcp.server.lowlevel.server), which skillshelf builds and
owns (`ViewServer`), not `MCPServer`: every spec method skillshelf answers it answers from tables of its
own, which MCPServer could not hold or change while it runs, and MCPServer offers no public handle on
its low-level server (until issue 32 skillshelf reached it through the private `_lowlevel_server`):

- `tools/list` and `tools/call`: a view's tools, replaced whole on a config reload (server/views.py
  `LiveView`), and `get_tool_input_schema`, so the SDK checks `Mcp-Param-*` headers against them;
- `resources/list`, `resources/templates/list` and `resources/read`: the skills' files, listed from a
  library that changes, each with its own MIME type (server/skills_ext.py);
- `prompts/list` and `prompts/get` (server/prompts.py), over the SDK's `Prompt`;
- `instructions`, which a config reload changes;
- `run` over streams skillshelf wraps (server/stdio.py: the bound on unanswered requests).

What MCPServer added around its low-level server and skillshelf keeps is added from the same public
parts: the request-state boundary (server/assembly.py), `subscriptions/listen` (`ListenHandler`), an
`Extension`'s methods and settings (`add_extension`), and the routes served beside `/mcp`
(`ViewServer.routes`).

An SDK upgrade is this file to read: tests/server/test_sdk_seam.py checks that it touches exactly
`PRIVATE_NAMES` (none), that no other module touches any private name, and that no class of the project
overrides a method of an SDK class other than an extension point it offers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.extension import Extension
from mcp.server.lowlevel.server import Server
from mcp.shared.extension import validate_extension_identifier
from mcp_types.methods import SPEC_CLIENT_METHODS
from starlette.applications import Starlette
from starlette.routing import Route

PRIVATE_NAMES: frozenset[str] = frozenset()


class ViewServer(Server[Any]):
    """A view's MCP server: the SDK's low-level server, and the HTTP routes served beside its `/mcp`
    (/health, the web view), which MCPServer kept for its `streamable_http_app` (`custom_route`)."""

    # Made when an HTTP app is, not with the server: a server over stdio never imports the web view.
    routes: Callable[[], Sequence[Route]] | None = None

    def http_app(self, **options: Any) -> Starlette:
        """The SDK's Streamable HTTP app of this server (`options`: its transport's), with `routes`."""
        routes = list(self.routes()) if self.routes is not None else []
        return self.streamable_http_app(custom_starlette_routes=routes, **options)


def add_extension(server: Server[Any], extension: Extension) -> None:
    """Serve `extension`'s request methods and advertise it with its settings, as `MCPServer(extensions=...)`
    does. What MCPServer does with the rest of an extension (tools, resources, a tools/call interceptor,
    methods of some protocol versions only) needs its tables: refused here, not silently dropped."""
    identifier = getattr(extension, "identifier", None)
    validate_extension_identifier(identifier, owner=type(extension).__name__)
    refused = [
        what
        for what, offered in (
            ("tools", extension.tools()),
            ("resources", extension.resources()),
            ("a tools/call interceptor", type(extension).intercept_tool_call is not Extension.intercept_tool_call),
            ("methods of some protocol versions", any(m.protocol_versions for m in extension.methods())),
        )
        if offered
    ]
    if refused:
        raise ValueError(f"extension {identifier!r} offers {', '.join(refused)}, which a view's server does not serve")
    for method in extension.methods():
        if server.get_request_handler(method.method) is not None:
            raise ValueError(f"extension {identifier!r} binds {method.method!r}, which is already served")
        server.add_request_handler(method.method, method.params_type, method.handler)
    server.extensions[extension.identifier] = extension.settings()


def request_methods(server: Server[Any], also: tuple[str, ...] = ()) -> list[str]:
    """Every request method of the protocol, and of `also` (extension methods), the server has a handler
    for (the call pipeline must classify each)."""
    return sorted(m for m in {*SPEC_CLIENT_METHODS, *also} if server.get_request_handler(m) is not None)
