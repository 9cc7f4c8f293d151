"""The floor under the benchmarks: the bare MCP SDK serving two no-op tools, over stdio or HTTP.

    python bench/noop_server.py                                  # stdio (bench/run.py's floor)
    python bench/noop_server.py --http PORT [--stream-responses | --stateless]   # load_http.py --floor

The tools are named like skillshelf's (searchPatterns, loadSkill) and answer fixed text of about the
size skillshelf sends (1.5 KB and 3 KB), so the benchmarks drive it exactly as they drive skillshelf.
What it reaches is what the SDK, the transport and the client cost on this machine with no work
behind the tools: no server built on the SDK can do better here.
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer

SEARCH_ANSWER = "y" * 1500
LOAD_ANSWER = "y" * 3000


def build() -> MCPServer:
    server = MCPServer("noop")

    @server.tool(name="searchPatterns")
    def search(query: str = "", limit: int = 5) -> str:
        return SEARCH_ANSWER

    @server.tool(name="loadSkill")
    def load(skillId: str = "") -> str:
        return LOAD_ANSWER

    return server


def serve_http(server: MCPServer, port: int, stream_responses: bool, stateless: bool) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        stateless_http=stateless,
        json_response=stateless or not stream_responses,
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port")
    parser.add_argument("--stream-responses", action="store_true")
    parser.add_argument("--stateless", action="store_true")
    args = parser.parse_args()
    server = build()
    if args.http is None:
        server.run()
    else:
        serve_http(server, args.http, args.stream_responses, args.stateless)


if __name__ == "__main__":
    main()
