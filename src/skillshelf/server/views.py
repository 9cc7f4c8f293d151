"""Views on the server: which tools a client sees and how (docs/views.md).

- A hidden tool is absent from tools/list; calling it returns TOOL_NOT_AVAILABLE "not available in
  this view" (tools are the product's public surface, so naming one leaks nothing). Hidden skills
  are the reader's business (library/access/reader.py), not this module's.
- Overrides: a new name (the own name then answers "is called X in this view"), a description
  where `{original}` inserts the tool's own, and pinned arguments: removed from the input schema;
  the call pipeline (server/pipeline.py) refuses them from a caller and injects them, at every place
  an argument can appear.
- `exposure = "search"`: tools/list holds three meta-tools, `{view}_search_tools`,
  `{view}_describe_tool` and `{view}_call_tool` (easy-mcp-proxy's names and shapes), whatever the
  view holds; the view's tools are reachable through them and only through them.
- Output schemas are sent only when the view says so (`output_schemas`); structured content is
  sent either way (docs/views.md says why).
"""

from __future__ import annotations

import copy
import difflib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp import MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.subscriptions import SubscriptionBus
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from skillshelf.catalogue import TOOLS
from skillshelf.config.views import ViewSettings
from skillshelf.envelope import Envelope, failure
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access.rules import decide_tool
from skillshelf.library.indexing.terms import STOPWORDS, word_parts
from skillshelf.library.skill.duplicates import porter_stems
from skillshelf.server.list_changed import ListChanged
from skillshelf.server.tooling import CallTool, make_tool, respond, run_tool, to_call_result, unknown_arguments

logger = logging.getLogger(__name__)

SEARCH_PAGE = 25
CONFIG_POLL_SECONDS = 1.0
MIN_SCORE = 0.5  # share of the query's words a tool's name or description must hold
META = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
CALLS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)


@dataclass(frozen=True)
class ViewTool:
    """One tool as a view presents it: its name, description and input schema (pinned arguments removed),
    over the SDK's `Tool`, which runs it. Its pinned arguments arrive set by the call pipeline, the only way
    a call reaches it. Not an SDK `Tool` subclass: the view's table (`LiveView`) serves tools/list and
    tools/call from these, and runs the SDK's `Tool` through its public `run` (tooling.run_tool)."""

    inner: Tool
    name: str
    description: str
    parameters: dict[str, Any]
    pinned: dict[str, Any] = field(default_factory=dict)
    send_output_schema: bool = True
    # The argument names a call may carry: the schema's and the pinned ones the pipeline sets. Known from
    # the tool alone, so made once, not a list of the schema's names per call (issue 36: the event loop's share).
    accepted: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "accepted", frozenset(self.parameters.get("properties", {})) | set(self.pinned))

    @classmethod
    def plain(cls, tool: Tool) -> ViewTool:
        """A tool as it is (a composite: server/composite.py)."""
        return cls(tool, tool.name, tool.description, tool.parameters)

    @property
    def title(self) -> str | None:
        return self.inner.title

    @property
    def annotations(self) -> ToolAnnotations | None:
        return self.inner.annotations

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.inner.output_schema if self.send_output_schema else None

    def wire(self) -> MCPTool:
        """The tool as tools/list carries it."""
        return MCPTool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.parameters,
            output_schema=self.output_schema,
            annotations=self.annotations,
            icons=self.inner.icons,
            _meta=self.inner.meta,
        )

    async def run(self, arguments: dict[str, Any], context: Context[Any, Any]) -> Any:
        """Run the tool; arguments its schema does not name are refused here, the one check (a misspelt
        optional argument would otherwise be dropped silently and the call would do something else)."""
        if not arguments.keys() <= self.accepted:
            started = time.perf_counter()
            given = {k: v for k, v in arguments.items() if k not in self.pinned}
            if (problem := unknown_arguments(given, self.parameters)) is not None:
                return to_call_result(failure(ErrorCode.VALIDATION_ERROR, problem, started))
        return await run_tool(self.inner, arguments, context)


def _without(schema: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    trimmed = copy.deepcopy(schema)
    for name in names:
        trimmed.get("properties", {}).pop(name, None)
    if "required" in trimmed:
        trimmed["required"] = [r for r in trimmed["required"] if r not in set(names)]
    return trimmed


def present(tool: Tool, view: ViewSettings) -> ViewTool:
    override = view.overrides.get(tool.name)
    pinned = dict(override.pinned) if override else {}
    if unknown := [p for p in pinned if p not in tool.parameters.get("properties", {})]:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"overrides.{tool.name}.pinned names {unknown}, which {tool.name} does not take; it takes "
            f"{', '.join(tool.parameters.get('properties', {}))}",
        )
    description = tool.description
    if override and override.description is not None:
        description = override.description.replace("{original}", tool.description)
    return ViewTool(
        tool,
        name=(override.name if override and override.name else tool.name),
        description=description,
        parameters=_without(tool.parameters, pinned),
        pinned=pinned,
        send_output_schema=view.output_schemas,
    )


@dataclass
class ToolSelection:
    """What one view makes of every tool the server has."""

    name: str
    view: ViewSettings
    shown: dict[str, ViewTool] = field(default_factory=dict)  # by exposed name
    hidden: set[str] = field(default_factory=set)  # own names
    renamed: dict[str, str] = field(default_factory=dict)  # own name -> exposed name
    call: CallTool | None = None  # how a meta-tool calls a tool: the view's call pipeline

    @classmethod
    def of(cls, name: str, view: ViewSettings, tools: Iterable[Tool], call: CallTool | None = None) -> ToolSelection:
        selection = cls(name, view, call=call)
        rules = view.tool_rules()
        for tool in tools:
            if not decide_tool(rules, tool.name).kept:
                selection.hidden.add(tool.name)
                continue
            shown = present(tool, view)
            selection.shown[shown.name] = shown
            if shown.name != tool.name:
                selection.renamed[tool.name] = shown.name
        return selection

    def own_names(self) -> set[str]:
        return {t.inner.name for t in self.shown.values()}

    def own_name(self, exposed: str) -> str:
        """The tool's own name behind a name this view exposes (any other name: itself)."""
        tool = self.shown.get(exposed)
        return tool.inner.name if tool is not None else exposed

    def listed(self) -> list[ViewTool]:
        """The tools tools/list carries: the view's own, or the three meta-tools in search mode."""
        if self.view.exposure == "search":
            return meta_tools(self)
        return list(self.shown.values())

    def refusal(self, name: str) -> str | None:
        """Why a call to `name` cannot go through here, or None when it may (or is unknown: the SDK says so)."""
        if name in self.hidden:
            return f"Tool {name!r} is not available in this view ({self.name!r})."
        if name in self.renamed:
            return f"Tool {name!r} is called {self.renamed[name]!r} in this view; call that."
        if self.view.exposure == "search" and name in self.shown:
            return f"Tool {name!r} is reached through {self.name}_call_tool in this view."
        return None

    def unknown(self, name: str) -> SkillshelfError:
        if refusal := self.refusal(name):
            return SkillshelfError(ErrorCode.TOOL_NOT_AVAILABLE, refusal)
        available = sorted(self.shown)
        close = difflib.get_close_matches(name, available, n=3, cutoff=0.6)
        close += [n for n in available if n.lower() == name.lower() and n not in close]
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        how = (
            f"Use {self.name}_search_tools to find tools."
            if self.view.exposure == "search"
            else "tools/list shows them."
        )
        return SkillshelfError(
            ErrorCode.TOOL_NOT_AVAILABLE,
            f"Unknown tool {name!r}.{hint} {how}",
            suggestions=close,
            details={"availableToolNames": available},
        )


# -- search mode ---------------------------------------------------------------------------------
class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ToolInfo(_Wire):
    name: str
    description: str
    accepted_parameter_names: list[str]
    input_schema: dict[str, Any] | None = None


class ToolSearch(_Wire):
    tools: list[ToolInfo]
    total: int
    offset: int
    limit: int


# Words agents use for what the tools' names and descriptions say otherwise.
TOOL_SYNONYMS: dict[str, tuple[str, ...]] = {
    "find": ("search",),
    "look": ("search",),
    "lookup": ("search",),
    "query": ("search",),
    "run": ("execute",),
    "exec": ("execute",),
    "code": ("execute", "script"),
    "get": ("load", "read"),
    "open": ("load", "read"),
    "fetch": ("load", "read"),
    "show": ("load", "list"),
    "remember": ("note",),
    "record": ("add", "note", "track"),
    "save": ("add", "note"),
    "write": ("add", "note"),
    "log": ("note", "track"),
    "used": ("usage", "track"),
    "use": ("usage", "track"),
    "health": ("stats",),
    "statistics": ("stats",),
    "history": ("session", "artifacts"),
    "past": ("session", "artifacts"),
    "previous": ("session", "artifacts"),
    "pattern": ("skill",),
    "patterns": ("skill",),
    "skills": ("skill",),
    "decided": ("decision",),
    "decide": ("decision",),
    "doc": ("documentation",),
    "docs": ("documentation",),
}
# Where a query word is found, by weight: the tool's action (the verb its name starts with), its name or
# title, a synonym there, its description's first sentence, anywhere in it, a close spelling.
ACTION_WEIGHT, NAME_WEIGHT, SYNONYM_IN_NAME_WEIGHT, LEAD_WEIGHT, BODY_WEIGHT, CLOSE_WEIGHT = (
    3.5,
    3.0,
    2.5,
    1.5,
    1.0,
    0.8,
)


@lru_cache(maxsize=1024)
def _stemmed(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each word of `text` with its forms: the word and its stems by the Porter stemmer the skill search uses
    ("reused" -> reus, "sessions" -> session); two words match when their forms meet. The words are the
    skill search's too (library/index/query.py: camelCase split the same way). Cached: tool texts are few,
    and one stemming pass serves a text's every word."""
    words = word_parts(text)
    stems = porter_stems(words)
    return tuple((word, frozenset({word, *stems[word]})) for word in words)


def _forms(word: str) -> frozenset[str]:
    return next((forms for _, forms in _stemmed(word)), frozenset({word}))


def _vocabulary(text: str) -> set[str]:
    return {form for _, forms in _stemmed(text) for form in forms}


def match_score(query: str, tool: ViewTool) -> tuple[float, float]:
    """(coverage, rank): the share of the query's words the tool holds (what MIN_SCORE bounds), and how well
    it answers them, 0-1: a word in the tool's name or title counts most (a synonym of it a little less),
    then in its description's first sentence, then anywhere in it; a close spelling counts too ("find
    skill" is searchPatterns).
    """
    words = _stemmed(query)
    wanted = [(w, forms) for w, forms in words if w not in STOPWORDS] or list(words)
    if not wanted:
        return 1.0, 1.0
    named = _stemmed(tool.name)
    action = named[0][1] if named else frozenset()
    name = _vocabulary(f"{tool.name} {tool.title or ''}")
    description = tool.description or ""
    lead = _vocabulary(description.split(". ", 1)[0])
    body = _vocabulary(description)
    found = weight = 0.0
    for word, own in wanted:
        synonyms = {form for s in TOOL_SYNONYMS.get(word, ()) for form in _forms(s)}
        if (own | synonyms) & action:
            hit = ACTION_WEIGHT if own & action else (ACTION_WEIGHT + SYNONYM_IN_NAME_WEIGHT) / 2
        elif own & name:
            hit = NAME_WEIGHT
        elif synonyms & name:
            hit = SYNONYM_IN_NAME_WEIGHT
        elif (own | synonyms) & lead:
            hit = LEAD_WEIGHT
        elif (own | synonyms) & body:
            hit = BODY_WEIGHT
        elif difflib.get_close_matches(word, body | name, n=1, cutoff=0.8):
            hit = CLOSE_WEIGHT
        else:
            continue
        found += 1 if hit >= BODY_WEIGHT else CLOSE_WEIGHT
        weight += hit
    return found / len(wanted), weight / (ACTION_WEIGHT * len(wanted))


def info(tool: ViewTool, with_schema: bool) -> ToolInfo:
    return ToolInfo(
        name=tool.name,
        description=tool.description,
        accepted_parameter_names=list(tool.parameters.get("properties", {})),
        input_schema=tool.parameters if with_schema else None,
    )


def meta_tools(selection: ToolSelection) -> list[ViewTool]:
    view = selection.name

    def search_tools(
        query: Annotated[str, Field(description="Words about the task; empty lists every tool.", max_length=500)] = "",
        limit: Annotated[int, Field(ge=1, le=100)] = SEARCH_PAGE,
        offset: Annotated[int, Field(ge=0)] = 0,
        include_schema: Annotated[bool, Field(description="Add each tool's inputSchema.")] = False,
    ) -> Annotated[CallToolResult, Envelope[ToolSearch]]:
        def run() -> ToolSearch:
            scored = [(match_score(query, t), t) for t in selection.shown.values()]
            passing = [(rank, t) for (coverage, rank), t in scored if coverage >= MIN_SCORE]
            ranked = sorted(passing, key=lambda p: (-p[0], p[1].name))
            page = [info(t, include_schema) for _, t in ranked[offset : offset + limit]]
            return ToolSearch(tools=page, total=len(ranked), offset=offset, limit=limit)

        return respond(run, lambda found: len(found.tools))

    def describe_tool(
        tool_name: Annotated[str, Field(description="A name from search_tools.", min_length=1, max_length=128)],
    ) -> Annotated[CallToolResult, Envelope[ToolInfo]]:
        def run() -> ToolInfo:
            tool = selection.shown.get(tool_name)
            if tool is None:
                raise selection.unknown(tool_name)
            return info(tool, True)

        return respond(run)

    async def call_tool(
        tool_name: Annotated[str, Field(description="The tool to run.", min_length=1, max_length=128)],
        ctx: Context[Any, Any],
        arguments: Annotated[
            dict[str, Any] | str | None, Field(description="Its arguments: an object (or the object as JSON text).")
        ] = None,
    ) -> Annotated[CallToolResult, Envelope[Any]]:
        started = time.perf_counter()
        parsed: Any = arguments or {}
        if isinstance(parsed, str):
            try:
                parsed = json.loads(parsed)
            except json.JSONDecodeError:
                parsed = None
        if not isinstance(parsed, dict):
            return to_call_result(failure(ErrorCode.VALIDATION_ERROR, "arguments must be a JSON object", started))
        if selection.call is None:  # a selection built without a pipeline serves no calls
            return to_call_result(failure(ErrorCode.INTERNAL_ERROR, "this view has no call pipeline", started))
        return await selection.call(tool_name, parsed, ctx, via=f"{view}_call_tool")

    tools = [
        make_tool(
            search_tools,
            f"{view}_search_tools",
            "Search tools",
            META,
            "Find this view's tools by what you need (empty query: all). Returns {tools,total,offset,limit}.",
        ),
        make_tool(
            describe_tool, f"{view}_describe_tool", "Describe a tool", META, "A tool's description and inputSchema."
        ),
        make_tool(
            call_tool,
            f"{view}_call_tool",
            "Call a tool",
            CALLS,
            "Run one of this view's tools by name with its arguments; no search needed first.",
        ),
    ]
    return [present(t, ViewSettings(output_schemas=selection.view.output_schemas)) for t in tools]


# -- instructions ---------------------------------------------------------------------------------
INTRO = "skillshelf serves a curated library of reusable skills (how-tos with optional code)."
# (the tools a line needs, the line with {ownName} placeholders for the exposed names): each tool's `step` in
# skillshelf/catalogue.py, in its order.
STEPS: tuple[tuple[tuple[str, ...], str], ...] = tuple((s.step_needs(), s.step) for s in TOOLS.values() if s.step)
RESOURCES = "Skills are also resources: skill://{category}/{name}/SKILL.md."


def instructions_for(selection: ToolSelection) -> str:
    """Server instructions naming only what this view offers, by the names it offers them under."""
    names = {own: selection.renamed.get(own, own) for own in selection.own_names()}
    lines = [INTRO]
    if selection.view.exposure == "search":
        view = selection.name
        lines.append(
            f"Tools are reached through {view}_search_tools (empty query: all), {view}_describe_tool (a tool's "
            f"schema) and {view}_call_tool(tool_name, arguments)."
        )
        if "searchPatterns" in names:
            lines.append(f"For a task, call {names['searchPatterns']} first: it finds the skill to load.")
    else:
        steps = [text.format(**names) for needed, text in STEPS if all(n in names for n in needed)]
        lines += [f"{i}. {text}" for i, text in enumerate(steps, start=1)]
    lines.append(RESOURCES)
    return "\n".join(lines) + "\n"


# -- what a view costs a model ---------------------------------------------------------------------
@dataclass(frozen=True)
class SurfaceCost:
    """tools/list and instructions as a model reads them (name, description, input schema), in tokens
    (characters / 4), and the whole tools/list on the wire (output schemas and annotations too)."""

    tools: list[str]
    read_tokens: int
    instructions_tokens: int
    wire_chars: int

    @property
    def total_tokens(self) -> int:
        return self.read_tokens + self.instructions_tokens


def surface_cost(selection: ToolSelection) -> SurfaceCost:
    listed = selection.listed()
    read = [{"name": t.name, "description": t.description, "inputSchema": t.parameters} for t in listed]
    wire = [t.wire().model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed]
    compact = (",", ":")
    return SurfaceCost(
        tools=[t.name for t in listed],
        read_tokens=len(json.dumps(read, separators=compact)) // 4,
        instructions_tokens=len(instructions_for(selection)) // 4,
        wire_chars=len(json.dumps({"tools": wire}, separators=compact)),
    )


# -- serving a view that can change under a running server -------------------------------------------
class LiveView:
    """The tools a server serves now: the view's selection, and the tools added beside it (its composites).
    A reload swaps the selection whole and tells clients to re-list.

    It answers tools/list and tools/call from its own table (`serve`), on the low-level server skillshelf
    builds (server/sdk.py): MCPServer's tool table holds the SDK's `Tool` objects it built itself and has
    no public way to hold a view's presentation of a tool or to be replaced while the server runs. Its
    middleware marks `tools.listChanged` in the capabilities and remembers sessions (legacy connections)
    to notify.
    """

    def __init__(self, selection: ToolSelection, bus: SubscriptionBus) -> None:
        self.selection = selection
        self.bus = bus
        self._added: dict[str, ViewTool] = {}
        self._table = {t.name: t for t in selection.listed()}
        self.changes = ListChanged(bus, "tools")

    def get(self, name: str) -> ViewTool | None:
        """The tool tools/call runs under `name`, or None."""
        return self._table.get(name)

    def add(self, tool: ViewTool) -> None:
        """Serve `tool` beside the view's own, across reloads (a composite, before the server serves)."""
        self._added[tool.name] = tool
        self._table = {**self._table, tool.name: tool}

    def tools(self) -> list[ViewTool]:
        """What tools/list carries."""
        return list(self._table.values())

    def serve(self, server: Server[Any]) -> None:
        """Answer `server`'s tools/list and tools/call from this table (see the class docstring)."""
        server.add_request_handler("tools/list", types.PaginatedRequestParams, self.list_tools)
        server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        server.get_tool_input_schema = self.input_schema

    async def list_tools(
        self, _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t.wire() for t in self.tools()])

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """A served tool's input schema, for the SDK's check of `Mcp-Param-*` headers (HTTP, 2026 protocol)."""
        tool = self.get(name)
        return tool.parameters if tool is not None else None

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> HandlerResult:
        """Run a served tool, as MCPServer's own tools/call does (the call pipeline's rules ran before it)."""
        tool = self.get(params.name)
        if tool is None:  # the pipeline answers unknown names before this; a bare server says it plainly
            return CallToolResult(
                content=[TextContent(type="text", text=f"Unknown tool: {params.name}")], is_error=True
            )
        context: Context[Any, Any] = Context(request_context=ctx, input_params=params, subscriptions=self.bus)
        try:
            return cast(HandlerResult, await tool.run(params.arguments or {}, context))
        except MCPError:
            raise
        except Exception as exc:  # the SDK's ToolError text, as MCPServer answers it (tools answer envelopes)
            logger.exception("tool %r raised", params.name)
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        return await self.changes.middleware(ctx, call_next)

    def install(self, server: Server[Any], selection: ToolSelection) -> None:
        """Serve `selection` from now on: one assignment of the table (a request sees the old one or the new
        one), and the instructions naming what it offers."""
        self._table = {**{t.name: t for t in selection.listed()}, **self._added}
        self.selection = selection
        server.instructions = instructions_for(selection)

    def install_from_thread(
        self, server: Server[Any], selection: ToolSelection, also: Callable[[], None] | None = None
    ) -> None:
        """`install`, from the config watcher's thread: on the event loop when a client has reached it (no
        request sees a half-swapped view), else at once (nothing is being served yet)."""

        def swap() -> None:
            self.install(server, selection)
            if also is not None:
                also()

        token = self.changes.loop_token
        if token is None:
            swap()
            return
        try:
            anyio.from_thread.run_sync(swap, token=token)
        except RuntimeError:  # the loop has stopped: no request can see the swap
            swap()

    def announce_from_thread(self) -> None:
        """Called on the config watcher's thread: tell every client to re-list the tools."""
        self.changes.from_thread()

    async def announce(self) -> None:
        await self.changes.announce()


def served_tools(server: Server[Any]) -> list[ViewTool]:
    """What `server`'s tools/list carries now: its view's table."""
    for middleware in server.middleware:
        if isinstance(live := getattr(middleware, "__self__", None), LiveView):
            return live.tools()
    return []


class ConfigWatcher:
    """Polls one config file (mtime, size, inode: editors replace files) and calls back on a change."""

    def __init__(self, path: Path, on_change: Callable[[], None], poll_seconds: float = CONFIG_POLL_SECONDS) -> None:
        self.path = path
        self.on_change = on_change
        self.poll_seconds = poll_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="skillshelf-config-watcher", daemon=True)
        self._seen = self._signature()

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            found = self.path.stat()
        except OSError:
            return None
        return (found.st_mtime_ns, found.st_size, found.st_ino)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            current = self._signature()
            if current == self._seen or current is None:
                continue  # a missing file is a save in progress; the last good config stays
            self._seen = current
            try:
                self.on_change()
            except Exception:
                logger.exception("reloading %s failed; the last good config stays", self.path)
