"""Plumbing shared by every tool: envelopes as tool results, argument validation, crash safety."""

from __future__ import annotations

import copy
import difflib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from contextlib import suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Any, Protocol, TypeVar, get_args, get_origin

import anyio
import anyio.lowlevel
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError

from skillshelf.catalogue import TOOLS
from skillshelf.envelope import Envelope, failure, internal_failure, run_service, run_service_async
from skillshelf.errors import ErrorCode
from skillshelf.server.skills_ext import parse_skill_uri

logger = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)

PROGRESS_EVERY_S = 0.25
WORK_THREADS = 4
# The MCP context of the tool call being run, for progress while a call waits on an index build.
_CALL_CONTEXT: ContextVar[Context[Any, Any] | None] = ContextVar("skillshelf_call_context", default=None)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def to_call_result(envelope: Envelope[Any]) -> CallToolResult:
    wire, text = envelope.to_wire_and_text()
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=wire, is_error=not envelope.success
    )


def respond(call: Callable[[], T], count: Callable[[T], int | None] | None = None) -> CallToolResult:
    """Run a service call as a tool: domain failures and crashes both come back as envelopes."""
    started = time.perf_counter()
    try:
        return to_call_result(run_service(call, count))
    except Exception:
        logger.exception("tool crashed")
        return to_call_result(internal_failure(started))


def describe_validation_error(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return "Invalid arguments: " + "; ".join(problems) + ". Fix them and call again."


async def respond_async(call: Callable[[], Awaitable[T]]) -> CallToolResult:
    """`respond` for a coroutine; cancellation is not a crash, so it propagates untouched."""
    started = time.perf_counter()
    try:
        return to_call_result(await run_service_async(call))
    except anyio.get_cancelled_exc_class():
        raise
    except Exception:
        logger.exception("tool crashed")
        return to_call_result(internal_failure(started))


class Refreshable(Protocol):
    """An index kept fresh in the background (the skill library, the session archive)."""

    def needs_sync(self) -> bool: ...
    def ensure_fresh(self) -> None: ...


async def run_work(
    call: Callable[[], T],
    count: Callable[[T], int | None] | None = None,
    *,
    waits_on: Refreshable | None = None,
) -> CallToolResult:
    """How every tool's work runs: `respond` in a worker thread, never on the event loop.

    The one rule for leaving the loop: any work may read files, query SQLite (whose lock a sync holds
    while it writes a batch), wait for an index being built or write to disk, and any of those can stall
    every other session. A call that waits on `waits_on` while it builds reports the build's progress to
    a caller that asked for it. (Pure validation failures are answered with `respond` directly.)

    Whether the call would wait is asked on the work thread too: it stats the index file (was it replaced
    by another process?), and a stat on the loop held every request for it (issue 36: 0.35 ms a call under
    load). A call that would wait gives its thread back and waits without one.
    """

    def respond_unless_waiting() -> CallToolResult | None:
        if waits_on is not None and waits_on.needs_sync():
            return None
        return respond(call, count)

    answered = await anyio.to_thread.run_sync(respond_unless_waiting, limiter=_work_limiter())
    if answered is not None:
        return answered
    assert waits_on is not None
    await _wait_for(waits_on)  # holding no work thread
    return await anyio.to_thread.run_sync(partial(respond, call, count), limiter=_work_limiter())


_WORK_LIMITER: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar("skillshelf_work_limiter")


def _work_limiter() -> anyio.CapacityLimiter:
    """At most WORK_THREADS tool calls run at once (one per event loop): more only queue for the GIL, and a
    crowd of threads woken together (a first index just finished) keeps the event loop from it."""
    try:
        return _WORK_LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(WORK_THREADS)
        _WORK_LIMITER.set(limiter)
        return limiter


async def _wait_for(index: Refreshable) -> None:
    """Wait (in a thread) until `index` is fresh; meanwhile report the build's progress to a caller that
    asked for it (a first index of a large library takes a while; the MCP SDK drops the notifications
    when the request carries no progress token). A failed sync is the work's to report."""

    def wait() -> None:
        with suppress(Exception):
            index.ensure_fresh()

    context = _CALL_CONTEXT.get()
    if context is None or not isinstance(getattr(index, "progress", None), tuple):
        await anyio.to_thread.run_sync(wait)
        return

    async def report() -> None:
        last: tuple[int, int] | None = None
        while True:
            done, total = index.progress  # type: ignore[attr-defined]
            if total and (done, total) != last:
                try:
                    await context.report_progress(done, total, f"indexing the library: {done}/{total} skills")
                except Exception:  # a closed session must not fail the call itself
                    logger.debug("could not report indexing progress", exc_info=True)
                    return
                last = (done, total)
            await anyio.sleep(PROGRESS_EVERY_S)

    async with anyio.create_task_group() as reporters:
        reporters.start_soon(report)
        await anyio.to_thread.run_sync(wait)
        reporters.cancel_scope.cancel()


def unknown_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """A message naming the arguments the input schema does not accept, or None when all are known."""
    accepted = list(schema.get("properties", {}))
    unknown = [name for name in arguments if name not in accepted]
    if not unknown:
        return None
    names = ", ".join(repr(n) for n in unknown)
    close = {n: difflib.get_close_matches(n, accepted, n=1, cutoff=0.6) for n in unknown}
    hints = "".join(f" Did you mean {m[0]!r} for {n!r}?" for n, m in close.items() if m)
    listed = ", ".join(accepted) or "none"
    return f"Unknown argument{'s' if len(unknown) > 1 else ''} {names}; this tool accepts: {listed}.{hints}"


async def run_tool(tool: Tool, arguments: dict[str, Any], context: Context[Any, Any]) -> Any:
    """How every tool runs (the SDK's `Tool.run`, called, never overridden): argument errors come back as a
    VALIDATION_ERROR envelope, like every other failure.

    Its caller is a view's tool (server/views.py `ViewTool.run`), which has refused the arguments the input
    schema does not name: checking them here too cost every call a second pass. The call's context is
    kept for the call's work, which reports an index build's progress through it (`_wait_for`).
    """
    started = time.perf_counter()
    token = _CALL_CONTEXT.set(context)
    try:
        return await tool.run(arguments, context, convert_result=True)
    except ToolError as exc:
        # `Tool.run` validates the arguments once (validating them here too cost every call a second pass)
        # and raises exactly a ToolError from the ValidationError when they fail; anything else is the tool's.
        if type(exc) is not ToolError or not isinstance(exc.__cause__, ValidationError):
            raise
        return to_call_result(failure(ErrorCode.VALIDATION_ERROR, describe_validation_error(exc.__cause__), started))
    finally:
        _CALL_CONTEXT.reset(token)


class CallTool(Protocol):
    """Call a tool of a view by the name it exposes, through every rule of the view (server/pipeline.py);
    `via` names the meta-tool or composite making the call."""

    def __call__(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None, *, via: str = ""
    ) -> Awaitable[CallToolResult]: ...


@dataclass(frozen=True)
class Places:
    """Where a tool's arguments can appear besides under their own name, so a rule about an argument (a
    view's pin, a hook's policy, the call log's skill id) holds wherever it is sent.

    - `aliases`: another name for a parameter (searchPatterns' `keyword` is `query`);
    - `items`: a list whose items are values of a parameter (loadSkill's `skillIds` holds `skillId`s);
    - `objects`: a list whose items are objects of the tool's own parameters (searchPatterns' `queries`);
    - `uris`: a parameter holding a `skill://category/name[/path]` URI (resources/read's and skills/get's
      `uri`): the skill it names is a value of `skillId`, the file a value of `path`. Parsed by the one
      parser the read serves it with, so a hook sees exactly the skill the read reaches.
    """

    aliases: Mapping[str, str] = field(default_factory=dict)
    items: Mapping[str, str] = field(default_factory=dict)
    objects: tuple[str, ...] = ()
    uris: tuple[str, ...] = ()

    def names_for(self, parameter: str) -> list[str]:
        return [parameter, *(alias for alias, own in self.aliases.items() if own == parameter)]

    def values_of(self, arguments: Mapping[str, Any], parameter: str) -> list[Any]:
        """Every value `parameter` has in these arguments, at every place it can appear."""
        found = [arguments[n] for n in self.names_for(parameter) if n in arguments]
        for listed, own in self.items.items():
            if own == parameter and isinstance(arguments.get(listed), list):
                found += arguments[listed]
        for listed in self.objects:
            for item in arguments.get(listed) or []:
                if isinstance(item, Mapping):
                    found += [item[n] for n in self.names_for(parameter) if n in item]
        for listed in self.uris:
            found += _named_by_uri(arguments.get(listed)).get(parameter, [])
        return found

    def sent(self, arguments: Mapping[str, Any], parameters: set[str]) -> set[str]:
        """Which places of `parameters` the caller filled (as `name`, `list[]` or `list[].name`)."""
        taken = {n for p in parameters for n in self.names_for(p) if n in arguments}
        taken |= {f"{listed}[]" for listed, own in self.items.items() if own in parameters and listed in arguments}
        for listed in self.objects:
            for item in arguments.get(listed) or []:
                if isinstance(item, Mapping):
                    taken |= {f"{listed}[].{n}" for p in parameters for n in self.names_for(p) if n in item}
        return taken

    def with_values(self, arguments: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments with `values` set at the parameter's own place and in every object item."""
        final = {**arguments, **values}
        for listed in self.objects:
            if isinstance(arguments.get(listed), list):
                items = arguments[listed]
                final[listed] = [{**item, **values} if isinstance(item, Mapping) else item for item in items]
        return final


def argument_places() -> dict[str, Places]:
    """Where each tool's arguments can also be sent, as its declaration says (skillshelf/catalogue.py), so a
    view's pin or a hook's policy holds at every place."""
    return {
        spec.name: Places(aliases=spec.aliases, items=spec.items, objects=spec.objects)
        for spec in TOOLS.values()
        if spec.aliases or spec.items or spec.objects
    }


def _named_by_uri(uri: Any) -> dict[str, list[str]]:
    """What a skill URI names, as the arguments a tool takes: {"skillId": [...], "path": [...]}."""
    parsed = parse_skill_uri(uri) if isinstance(uri, str) else None
    if parsed is None:
        return {}
    category, name, path = parsed
    return {"skillId": [f"{category}/{name}"], "path": [path] if path is not None else []}


def make_tool(
    fn: Callable[..., Any],
    name: str,
    title: str,
    annotations: ToolAnnotations = READ_ONLY,
    description: str | None = None,
) -> Tool:
    """A tool as the SDK builds it from a function (its schemas from the signature); `run_tool` runs it.

    The SDK derives a pydantic argument model and a JSON schema from the signature: about 5 ms a tool, 80 ms a
    server, paid again for every server a process builds (each view, each reload, each test). A function made
    again for another server has the same code, defaults and words, so the derived parts are reused; each tool
    still gets its own `fn` and its own copy of the schema, which callers edit (`untitled`)."""
    key = _tool_key(fn, name, title, annotations, description)
    template = _TOOL_TEMPLATES.get(key) if key is not None else None
    if template is None:
        template = _unvalidated_answers(
            Tool.from_function(fn, name=name, title=title, annotations=annotations, description=description), fn
        )
        if key is not None:
            _TOOL_TEMPLATES[key] = template
    return template.model_copy(update={"fn": fn, "parameters": copy.deepcopy(template.parameters)})


def _unvalidated_answers(tool: Tool, fn: Callable[..., Any]) -> Tool:
    """`tool` with its output schema published but not checked again on every answer, when `fn` answers a
    `CallToolResult` (`Annotated[CallToolResult, Envelope[...]]`: an envelope `to_call_result` built from the
    tool's own pydantic models, so it has the schema's shape by construction).

    The SDK validated each such answer against the output model again (`FuncMetadata.convert_result`): every
    hit of a search, a load's whole text, 13-22 us a call (issue 36). It publishes a schema that has no model
    without validating answers against it; clients still may (the SDK's client does, and so every tool test)."""
    if tool.fn_metadata.output_model is None or not _answers_call_results(fn):
        return tool
    published = tool.fn_metadata.model_copy(update={"output_model": None})
    return tool.model_copy(update={"fn_metadata": published})


def _answers_call_results(fn: Callable[..., Any]) -> bool:
    """Whether `fn` is declared to return a `CallToolResult` (bare or `Annotated`)."""
    try:
        returned = inspect.signature(fn, eval_str=True).return_annotation
    except (NameError, TypeError, ValueError):  # an annotation that does not resolve: as the SDK made it
        return False
    if get_origin(returned) is Annotated:
        returned = get_args(returned)[0]
    return isinstance(returned, type) and issubclass(returned, CallToolResult)


# Built tools by what the SDK derives them from; bounded by the tool functions in the source.
_TOOL_TEMPLATES: dict[Hashable, Tool] = {}


def _tool_key(
    fn: Callable[..., Any], name: str, title: str, annotations: ToolAnnotations, description: str | None
) -> Hashable | None:
    """What `Tool.from_function` reads of a function: its code (the signature; annotations are strings under
    `from __future__ import annotations`, read against its module), its annotations and defaults, and the
    tool's words. None (build afresh) for a callable without code, such as a partial, one whose signature was
    set by hand (a composite tool's: server/composite.py), or a default that cannot be a key."""
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__wrapped__") or "__signature__" in getattr(fn, "__dict__", {}):
        return None
    kwdefaults = tuple(sorted((getattr(fn, "__kwdefaults__", None) or {}).items()))
    hints = tuple(sorted(fn.__annotations__.items()))
    words = (name, title, annotations.model_dump_json(), description)
    key = (code, fn.__module__, hints, fn.__defaults__, kwdefaults, words)
    try:
        hash(key)
    except TypeError:
        return None
    return key
