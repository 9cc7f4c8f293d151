"""The floor under bench/load_http.py: the bare MCP SDK serving two no-op tools over streamable HTTP.

    python bench/noop_http.py PORT [--stream-responses | --stateless]

The tools are named like skillshelf's (searchPatterns, loadSkill) and answer fixed text of about
the size skillshelf sends (1.5 KB and 3 KB), so `load_http.py --floor` can drive it exactly as it
drives skillshelf. What this reaches is what the SDK, uvicorn and the load generator cost on this
machine with no work behind the tools: no server built on the SDK can do better here.
"""

from __future__ import annotations

import argparse

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

SEARCH_ANSWER = "y" * 1500
LOAD_ANSWER = "y" * 3000


def build(stream_responses: bool, stateless: bool) -> object:
    server = MCPServer("noop")

    @server.tool(name="searchPatterns")
    def search(query: str = "", limit: int = 5) -> str:
        return SEARCH_ANSWER

    @server.tool(name="loadSkill")
    def load(skillId: str = "") -> str:
        return LOAD_ANSWER

    return server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        stateless_http=stateless,
        json_response=stateless or not stream_responses,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("port", type=int)
    parser.add_argument("--stream-responses", action="store_true")
    parser.add_argument("--stateless", action="store_true")
    args = parser.parse_args()
    app = build(args.stream_responses, args.stateless)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
