"""The floor under the benchmarks: the bare MCP SDK serving two no-op tools, over stdio or HTTP.

    python bench/noop_server.py                                  # stdio (bench/run.py's floor)
    python bench/noop_server.py --http PORT [--stream-responses | --stateless]   # load_http.py --floor
    python bench/noop_server.py --http PORT --work LIBRARY       # the floor doing skillshelf's work
    python bench/noop_server.py --replay LIBRARY     # stdio: skillshelf's own answers, computed before serving

The tools are named like skillshelf's (searchPatterns, loadSkill) and answer fixed text of about the
size skillshelf sends (1.5 KB and 3 KB), so the benchmarks drive it exactly as they drive skillshelf.
What it reaches is what the SDK, the transport and the client cost on this machine with no work
behind the tools: no server built on the SDK can do better here.

With `--work LIBRARY` the same two tools do skillshelf's own work instead of answering fixed text: the
search and the load of `skillshelf.skills.service` on an index of LIBRARY, wrapped in the same envelope,
with nothing of skillshelf's serving layers (no views, pipeline, hooks, call log, auth, usage records).
The gap between it and the bare floor is what the work costs; the gap between skillshelf and it is what
skillshelf's layers cost.

With `--replay LIBRARY` (a generated library with its LIBRARY.queries.json) the tools answer exactly what
skillshelf's searchPatterns (limit 10) and loadSkill send for those queries and their answers, every answer
computed before the server starts (in skillshelf's envelope, by the same service functions): the bare SDK
returning the same payload, with no work a call. bench/ab.py's `replay` variant.
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult  # at module level: the tools' annotations are resolved from here

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


def build_working(library: str) -> MCPServer:
    """The bare SDK whose tools run skillshelf's search and load (see the module's docstring)."""
    import tempfile
    from pathlib import Path

    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.tooling import respond
    from skillshelf.skills import service

    index_dir = Path(tempfile.mkdtemp(prefix="skillshelf-work-floor-"))
    skills = SkillLibrary(LibraryConfig(roots=[Path(library)], index_dir=index_dir, watch=False))
    skills.sync()
    reader = LibraryReader(skills)
    server = MCPServer("work-floor")

    @server.tool(name="searchPatterns")
    def search(query: str = "", limit: int = 5) -> CallToolResult:
        return respond(
            lambda: service.compact_result(service.search_patterns(reader, query, limit=limit)), lambda r: len(r.hits)
        )

    @server.tool(name="loadSkill")
    def load(skillId: str = "") -> CallToolResult:
        return respond(lambda: service.load_for_agent(reader, skillId))

    return server


def build_replaying(library: str) -> MCPServer:
    """The bare SDK answering skillshelf's own answers for the library's queries (see the docstring)."""
    import json
    from pathlib import Path

    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.tooling import respond
    from skillshelf.skills import service

    root = Path(library)
    index_dir = root.with_name(root.name + ".replay-index")  # kept: later starts only check it
    skills = SkillLibrary(LibraryConfig(roots=[root], index_dir=index_dir, watch=False))
    skills.sync()
    reader = LibraryReader(skills)
    queries = json.loads(root.with_name(root.name + ".queries.json").read_text(encoding="utf-8"))["queries"]

    def found(query: str) -> CallToolResult:
        return respond(
            lambda: service.compact_result(service.search_patterns(reader, query, limit=10)), lambda r: len(r.hits)
        )

    def loaded(skill_id: str) -> CallToolResult:
        return respond(lambda: service.load_for_agent(reader, skill_id))

    searches = {q["query"]: found(q["query"]) for q in queries}
    loads = {q["answer"]: loaded(q["answer"]) for q in queries}
    skills.close()
    server = MCPServer("replay")

    @server.tool(name="searchPatterns")
    def search(query: str = "", limit: int = 10) -> CallToolResult:
        return searches[query]

    @server.tool(name="loadSkill")
    def load(skillId: str = "") -> CallToolResult:
        return loads[skillId]

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
    parser.add_argument("--work", metavar="LIBRARY", help="do skillshelf's search and load on this library")
    parser.add_argument("--replay", metavar="LIBRARY", help="answer skillshelf's answers for LIBRARY's queries")
    args = parser.parse_args()
    server = build_working(args.work) if args.work else build_replaying(args.replay) if args.replay else build()
    if args.http is None:
        server.run()
    else:
        serve_http(server, args.http, args.stream_responses, args.stateless)


if __name__ == "__main__":
    main()
