"""The one call pipeline: every request a view's server answers passes here, and every rule of the view
that applies to it is applied here, whatever surface it came through.

- `tools/call`, and the calls made on an agent's behalf inside one (a search-mode `{view}_call_tool`, a
  composite's steps): the view's tool visibility, its pinned arguments (at every place an argument
  can appear: bulk items included), the pre_call and post_call hooks, the caller's rate limit (the
  HTTP gate charges the request itself; each inner call is charged to the same caller's budget) and
  the call log;
- reads of content (`resources/read`, `skills/get`, `prompts/get`, and the web view's pages, which call
  `CallPipeline.read` themselves: server/web.py): the hooks, which see the skill ids and paths a read
  touches as they see a tool's (a `skill://` URI's skill and file, READ_PLACES), so a policy on a skill
  holds on every surface; a post_call hook sees the result as an envelope and may replace it
  (`redact_secrets` masks a file read as a resource or shown on a web page as it masks loadSkill); the
  call log;
- listings and protocol methods pass untouched (what they list comes from the view's reader);
- a method this module does not classify is refused: a new surface is wired here, or it does not answer.

A meta-tool or composite is not hooked itself: the calls it makes are (a policy on `executeSkill` holds
inside "search then run"). The call log records every call, an inner one with the top-level tool it was
made by (`via`).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, is_dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, cast

from mcp import MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, TypeAdapter

from skillshelf.caller import current_caller
from skillshelf.envelope import failure
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.server.auth import CallerBudget, budget_of, caller_of
from skillshelf.server.calllog import CallLog, CallRecord
from skillshelf.server.hooks import HookResult, Hooks, ToolCall
from skillshelf.server.tooling import Places, to_call_result

if TYPE_CHECKING:
    from skillshelf.server.views import LiveView

logger = logging.getLogger(__name__)

Kind = Literal["call", "read", "list", "protocol", "notification"]
# Every method a skillshelf server answers, by what the pipeline does with it (tests/server/test_pipeline.py
# checks this table against the handlers the server really registers).
METHODS: dict[str, Kind] = {
    "tools/call": "call",
    "resources/read": "read",
    "skills/get": "read",
    "prompts/get": "read",
    "tools/list": "list",
    "resources/list": "list",
    "resources/templates/list": "list",
    "prompts/list": "list",
    "skills/list": "list",
    "initialize": "protocol",
    "ping": "protocol",
    "server/discover": "protocol",
    "subscriptions/listen": "protocol",
    "logging/setLevel": "protocol",
    "completion/complete": "protocol",
}
# Reads that name a skill by its `skill://` URI: the skill and file it names are the read's `skillId` and
# `path`, for the hooks and the call log exactly as a tool's arguments are (tooling.Places).
READ_PLACES: dict[str, Places] = {"resources/read": Places(uris=("uri",)), "skills/get": Places(uris=("uri",))}
# The rate-limit budget of the request being answered (over HTTP): calls made inside it are charged too.
_budget: ContextVar[CallerBudget | None] = ContextVar("skillshelf_budget", default=None)
# The arguments' size in the call log, as compact JSON: one encoder for every call (json.dumps makes one a call).
SENT_JSON = json.JSONEncoder(separators=(",", ":"), default=str)
RunTool = Callable[[str, dict[str, Any]], Awaitable[HandlerResult]]
Read = Callable[[dict[str, Any]], Awaitable[Any]]  # a read, given its (possibly hooked) arguments


class ArgumentError(SkillshelfError):
    """Arguments the view does not allow (a pinned one sent, in any of its places)."""


class ReadRefused(Exception):
    """A read a hook stopped: a pre_call abort or failure (`after` False), or a post_call failure or a
    replacement that is not a success (`after` True). `code` and `message` come from the hook's envelope."""

    def __init__(self, result: CallToolResult, *, after: bool) -> None:
        error = (result.structured_content or {}).get("error")
        self.code = str(error.get("code") or "CALL_ABORTED") if isinstance(error, dict) else "CALL_ABORTED"
        self.message = _message_of(result)
        self.after = after
        super().__init__(self.message)


@dataclass
class CallPipeline:
    """The rules of one view, around everything its server answers (see the module docstring).

    Made before its server (the view's meta-tools and composites call through it), then `attach`ed."""

    view: str
    hooks: Hooks | None = None
    call_log: CallLog | None = None
    places: Mapping[str, Places] = field(default_factory=dict)  # by a tool's own name
    passthrough: set[str] = field(default_factory=set)  # composites and meta-tools: their inner calls are hooked
    seen: Counter[str] = field(default_factory=Counter)  # requests and notifications by method, as they pass
    _live: LiveView | None = None

    def attach(self, server: Server[Any], live: LiveView) -> CallPipeline:
        """Serve `server`'s requests: first of its middleware after the SDK's own, so every rule applies
        before anything skillshelf adds runs."""
        self._live = live
        server.middleware.insert(_first_own(server), self.middleware)
        return self

    def set_hooks(self, hooks: Hooks | None) -> None:
        """New hooks from a reloaded config (called on the event loop, between requests)."""
        self.hooks = hooks

    @property
    def live(self) -> LiveView:
        assert self._live is not None, "attach the pipeline to its server first"
        return self._live

    # -- the entry: every message --------------------------------------------------------------
    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        kind = classify(ctx.method)
        self.seen[ctx.method] += 1
        if kind is None:
            raise MCPError(code=types.METHOD_NOT_FOUND, message=f"Method not found: {ctx.method}")
        if kind in ("list", "protocol", "notification"):
            return await call_next(ctx)
        http = ctx.request if ctx.request is not None and hasattr(ctx.request, "scope") else None
        caller = caller_of(http)
        token, budget = current_caller.set(caller), _budget.set(budget_of(http))
        try:
            if kind == "call":
                return await self._tool_request(ctx, call_next, caller)
            return await self._read(ctx, call_next, caller)
        finally:
            current_caller.reset(token)
            _budget.reset(budget)

    # -- tool calls -----------------------------------------------------------------------------
    async def _tool_request(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext, caller: str | None
    ) -> HandlerResult:
        params = dict(ctx.params or {})
        name = str(params.get("name", ""))
        arguments = params.get("arguments") or {}

        async def run(exposed: str, final: dict[str, Any]) -> HandlerResult:
            if exposed == name and params.get("arguments") == final:  # unchanged: the request as it came
                return await call_next(ctx)  # (`replace` builds a new context: 1.8 us a call, issue 36)
            return await call_next(replace(ctx, params={**params, "name": exposed, "arguments": final}))

        if self.live.selection.refusal(name) is not None or self.live.get(name) is None:
            started = time.perf_counter()
            problem = self.live.selection.unknown(name)  # hidden, renamed, or no such tool: the envelope says which
            result = to_call_result(
                failure(problem.code, problem.message, started, problem.suggestions, problem.details)
            )
            self._log(name, arguments, caller, started, result, None)
            return result
        return await self._through(name, arguments, caller, None, run)

    async def call(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None, *, via: str = ""
    ) -> CallToolResult:
        """A call made on an agent's behalf inside another (a meta-tool's or a composite's): every rule again."""
        caller = current_caller.get()
        started = time.perf_counter()
        budget = _budget.get()
        if budget is not None and (wait := budget.take()) > 0:
            message = f"Too many calls: this caller's rate limit allows another in {wait:.1f} s; wait, then retry."
            result = to_call_result(failure(ErrorCode.RATE_LIMITED, message, started))
            self._log(name, arguments, caller, started, result, via or "?")
            return result

        tool = self.live.selection.shown.get(name) or self.live.get(name)
        if tool is None or name in self.passthrough:  # hidden, unknown, or itself a meta-tool or composite
            problem = self.live.selection.unknown(name)
            if name in self.passthrough:
                problem = SkillshelfError(ErrorCode.TOOL_NOT_AVAILABLE, f"{name!r} cannot be called from {via!r}.")
            result = to_call_result(
                failure(problem.code, problem.message, started, problem.suggestions, problem.details)
            )
            self._log(name, arguments, caller, started, result, via or "?")
            return result

        async def run(_exposed: str, final: dict[str, Any]) -> HandlerResult:
            try:
                ran = await tool.run(final, context or Context())
            except SkillshelfError as exc:
                return to_call_result(failure(exc.code, exc.message, started, exc.suggestions, exc.details))
            except Exception as exc:  # arguments the tool's schema refuses: the SDK's ToolError
                return to_call_result(failure(ErrorCode.VALIDATION_ERROR, str(exc), started))
            return cast(HandlerResult, ran)

        outcome = await self._through(name, arguments, caller, via or "?", run)
        return _as_call_result(outcome) or to_call_result(
            failure(ErrorCode.INTERNAL_ERROR, f"{name} gave no tool result", started)
        )

    async def _through(
        self, name: str, arguments: Any, caller: str | None, via: str | None, run: RunTool
    ) -> HandlerResult:
        """Pins, then the pre_call hook, the tool, the post_call hook; the call log whatever happens."""
        started = time.perf_counter()
        result: HandlerResult = None
        own: str | None = None
        try:
            own = self.live.selection.own_name(name)
            try:
                final = self._pinned(name, own, arguments)
            except ArgumentError as exc:
                result = to_call_result(failure(exc.code, exc.message, started))
                return result
            call = ToolCall(name, final, self.view, caller, own=own, via=via, places=self.places.get(own))
            hooked = self.hooks is not None and name not in self.passthrough
            if hooked and self.hooks is not None:
                decided = await self.hooks.before(call)
                if isinstance(decided, CallToolResult):
                    result = decided
                    return result
                call = decided
            result = await run(name, call.arguments)
            if hooked and self.hooks is not None and (as_result := _as_call_result(result)) is not None:
                result = await self.hooks.after(call, as_result)
            return result
        finally:
            self._log(name, arguments, caller, started, result, via, own)

    def _pinned(self, name: str, own: str, arguments: Any) -> dict[str, Any]:
        """The arguments with the view's pinned values in every place they can appear; sending one is refused."""
        if not isinstance(arguments, dict):
            return {}
        tool = self.live.selection.shown.get(name)
        pinned = tool.pinned if tool is not None else {}
        if not pinned:
            return dict(arguments)
        places = self.places.get(own) or Places()
        fixed = sorted(places.sent(arguments, set(pinned)))
        if fixed:
            names = ", ".join(repr(n) for n in fixed)
            raise ArgumentError(
                ErrorCode.VALIDATION_ERROR,
                f"{names} {'is' if len(fixed) == 1 else 'are'} fixed by this view; call again without it.",
            )
        return places.with_values(arguments, pinned)

    # -- reads of content -------------------------------------------------------------------------
    async def _read(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext, caller: str | None
    ) -> HandlerResult:
        """resources/read, skills/get, prompts/get: `read`, with a refusal as the MCP error it is."""
        params = dict(ctx.params or {})

        async def run(arguments: dict[str, Any]) -> HandlerResult:
            return await call_next(ctx if arguments == params else replace(ctx, params=arguments))

        try:
            result: HandlerResult = await self.read(ctx.method, params, run, caller=caller)
        except ReadRefused as exc:
            raise MCPError(
                code=types.INTERNAL_ERROR if exc.after else types.INVALID_REQUEST, message=exc.message
            ) from None
        return result

    async def read(self, name: str, arguments: dict[str, Any], run: Read, *, caller: str | None) -> Any:
        """The one way a surface reads content (resources/read, skills/get, prompts/get, the web view's pages).

        The pre_call hook sees the read as a call named `name` with `arguments`, and the skill ids and paths
        it touches (`call.skill_ids`, `call.paths`: a `skill://` URI's too, READ_PLACES); it may change the
        arguments `run` gets, or refuse. The post_call hook sees the result as an envelope `{success, data}`
        and may replace it: the replacement's `data` is returned. The call log records the read whatever
        happens. Raises ReadRefused when a hook stops it; what `run` raises goes on (logged with its code).
        """
        started = time.perf_counter()
        call = ToolCall(name, arguments, self.view, caller, own=name, places=self._places_of(name))
        code: str | None = "PROTOCOL_ERROR"  # what an exception that is not ours means to the log
        try:
            if self.hooks is not None:
                decided = await self.hooks.before(call)
                if isinstance(decided, CallToolResult):
                    raise ReadRefused(decided, after=False)
                call = decided
            result = await run(call.arguments)
            if self.hooks is not None and self.hooks.post_call is not None:
                result = await self._read_after(call, result)
            code = None
            return result
        except (ReadRefused, SkillshelfError) as exc:
            code = str(exc.code)
            raise
        finally:
            self._record(call, arguments, started, code, None)

    async def _read_after(self, call: ToolCall, result: Any) -> Any:
        """A read's result as an envelope `{success, data}` for the post_call hook; a replacement goes back out."""
        assert self.hooks is not None
        data = _as_data(result)
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
        wrapped = CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content={"success": True, "data": data}
        )
        after = await self.hooks.after(call, wrapped)
        if after is wrapped:
            return result
        envelope = after.structured_content or {}
        if after.is_error or not envelope.get("success", False):
            raise ReadRefused(after, after=True)
        return envelope.get("data")

    # -- the call log ---------------------------------------------------------------------------
    def _known(self, name: str) -> bool:
        """A name the server answers to (a tool, in any view's spelling, or a read method): the call log
        keeps others cut and counted, so made-up names cannot flood it."""
        selection = self.live.selection
        return (
            name in METHODS
            or name in selection.shown
            or name in selection.hidden
            or name in selection.renamed
            or self.live.get(name) is not None
        )

    def _places_of(self, own: str) -> Places:
        return self.places.get(own) or READ_PLACES.get(own) or Places()

    def _log(
        self,
        name: str,
        arguments: Any,
        caller: str | None,
        started: float,
        result: HandlerResult,
        via: str | None,
        own: str | None = None,
    ) -> None:
        """A tool call's line: success and error code from its envelope. `own`: the tool's own name, from a
        caller that found the tool (so the name is known): not looked up again on every call (issue 36)."""
        success, envelope, response_bytes = _outcome(result)
        error = envelope.get("error") if isinstance(envelope.get("error"), dict) else None
        fallback = "PROTOCOL_ERROR" if result is None else "UNKNOWN"
        code = None if success else str((error or {}).get("code") or fallback)
        known = own is not None or self._known(name)
        places = self._places_of(self.live.selection.own_name(name) if own is None else own)
        call = ToolCall(name, arguments if isinstance(arguments, dict) else {}, self.view, caller, places=places)
        self._record(call, arguments, started, code, via, response_bytes, known=known)

    def _record(
        self,
        call: ToolCall,
        sent: Any,
        started: float,
        code: str | None,
        via: str | None,
        response_bytes: int = 0,
        *,
        known: bool = True,
    ) -> None:
        """One call-log line; the skill is the first id the call names (through `ToolCall.skill_ids`, as the
        hooks see it), and only when the call succeeded: an id that resolved, never junk."""
        if self.call_log is None:
            return
        ids = [i for i in call.skill_ids if 0 < len(i) <= 300 and "\n" not in i] if code is None else []
        self.call_log.write(
            CallRecord(
                tool=call.tool,
                view=self.view,
                caller=call.caller,
                duration_ms=(time.perf_counter() - started) * 1000,
                success=code is None,
                error_code=code,
                request_bytes=utf8_size(SENT_JSON.encode(sent)),
                response_bytes=response_bytes,
                skill=ids[0] if ids else None,
                via=via,
                known=known,
            )
        )


def _first_own(server: Server[Any]) -> int:
    """The position after the SDK's own middleware (tracing, request state), where skillshelf's begin."""
    from skillshelf.server.views import LiveView  # the views module imports this one's callers

    for position, middleware in enumerate(server.middleware):
        if isinstance(getattr(middleware, "__self__", None), LiveView):
            return position
    return len(server.middleware)


def classify(method: str) -> Kind | None:
    if method.startswith("notifications/"):
        return "notification"
    return METHODS.get(method)


def _as_call_result(result: HandlerResult) -> CallToolResult | None:
    if isinstance(result, CallToolResult):
        return result
    if isinstance(result, dict) and "content" in result:
        try:
            return CallToolResult.model_validate(result)
        except ValueError:
            return None
    return None


def _outcome(result: HandlerResult) -> tuple[bool, dict[str, Any], int]:
    """A tool result's success, envelope (structured content) and text size in bytes, for the call log.

    Read off the SDK's wire dict as it is (what `call_next` returns: the SDK validated it when it shaped it):
    validating it into a CallToolResult again only to read three fields cost 5 us of CPU a call (issue 36).
    Anything else goes through `_as_call_result`; not a tool result: (False, {}, 0)."""
    if isinstance(result, dict) and _is_wire_result(result):
        content: list[dict[str, Any]] = result["content"]
        size = sum(utf8_size(c["text"]) for c in content if c.get("type") == "text")
        return not result.get("isError", False), result.get("structuredContent") or {}, size
    as_result = _as_call_result(result)
    if as_result is None:
        return False, {}, 0
    return not as_result.is_error, as_result.structured_content or {}, _response_bytes(as_result)


def _is_wire_result(result: dict[str, Any]) -> bool:
    content, structured, error = result.get("content"), result.get("structuredContent"), result.get("isError", False)
    return (
        isinstance(content, list)
        and all(isinstance(c, dict) and (c.get("type") != "text" or isinstance(c.get("text"), str)) for c in content)
        and isinstance(structured, dict | None)
        and isinstance(error, bool)
    )


def _message_of(result: CallToolResult) -> str:
    error = (result.structured_content or {}).get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return "".join(c.text for c in result.content if isinstance(c, TextContent))[:500] or "refused"


def _response_bytes(result: CallToolResult | None) -> int:
    if result is None:
        return 0
    return sum(utf8_size(c.text) for c in result.content if isinstance(c, TextContent))


def utf8_size(text: str) -> int:
    """The bytes of `text` in UTF-8, without encoding it when it is ASCII (`isascii` is a flag CPython keeps:
    encoding a load's answer only to count it was a few microseconds a call on the event loop, issue 36)."""
    return len(text) if text.isascii() else len(text.encode())


def _as_data(result: Any) -> Any:
    """A read's result as JSON data, as a post_call hook sees it (a model or dataclass by its wire names)."""
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if is_dataclass(result) and not isinstance(result, type):
        return adapter(type(result)).dump_python(result, mode="json", by_alias=True)
    return result


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def adapter(shape: type[Any]) -> TypeAdapter[Any]:
    """A read's result type as pydantic reads and writes it (a web page's content: server/web.py), built once
    per type (two threads building one at once build the same)."""
    found = _ADAPTERS.get(shape)
    if found is None:
        found = _ADAPTERS[shape] = TypeAdapter(shape)
    return found


__all__ = ["METHODS", "READ_PLACES", "CallPipeline", "HookResult", "ReadRefused", "classify"]
