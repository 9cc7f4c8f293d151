"""What runs around every tool call of a view: the pre_call/post_call hooks and the call log.

A hook is a function named by a dotted path, `package.module:function` (`package.module.function`
works too), sync or async:

- `pre_call(call: ToolCall) -> HookResult | None`: `HookResult(arguments=...)` replaces the
  arguments; `HookResult(abort="reason")` refuses the call (the agent gets a CALL_ABORTED envelope
  carrying the reason); `None` lets it through untouched.
- `post_call(call: ToolCall, envelope: dict) -> HookResult | None`: `HookResult(result=...)`
  replaces the envelope (the wire form: `success`, `data` or `error`, `metadata`). Keep the tool's
  envelope shape: clients check structured results against the tool's output schema.

A hook that raises, returns something else, or runs past `timeout_s` fails that call with
HOOK_FAILED and a log line; the server keeps serving. A sync hook runs in a worker thread.

Where hooks run: around the tool that actually does the work. A direct call is hooked once; a
composite tool is not hooked itself, but each of its steps is (so a policy on `loadSkill` also holds
inside "search then load"); a meta-tool (search-mode `call_tool`) must call through
`ToolPipeline.call`, so the tool it runs is hooked and the meta-tool itself is not. The call log
records what the agent called: one line per top-level call, composites and meta-tools included.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import json
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent

from skillshelf.config.team import HookSettings
from skillshelf.config.views import ViewSettings
from skillshelf.envelope import failure
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.server.auth import caller_of, current_caller
from skillshelf.server.calllog import CallLog, CallRecord, skill_of
from skillshelf.server.composite import install_composites
from skillshelf.server.tooling import to_call_result

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolCall:
    """What a hook sees: the tool, its arguments, the view and the caller's token name (if any)."""

    tool: str
    arguments: dict[str, Any]
    view: str
    caller: str | None = None


@dataclass(frozen=True)
class HookResult:
    arguments: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    abort: str | None = None


Hook = Callable[..., Any]


def load_hook(path: str) -> Hook:
    """The function a dotted path names; a clear VALIDATION_ERROR when it cannot be imported."""
    module_name, sep, attribute = path.partition(":")
    if not sep:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR, f"hook {path!r}: write it as package.module:function (e.g. myhooks:audit)"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"hook {path!r}: module {module_name!r} cannot be imported ({type(exc).__name__}: {exc}); "
            "is it installed in the server's environment or on PYTHONPATH?",
        ) from exc
    hook = getattr(module, attribute, None)
    if not callable(hook):
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"hook {path!r}: {module_name} has no function {attribute!r}")
    return hook  # type: ignore[no-any-return]


@dataclass
class Hooks:
    pre_call: Hook | None = None
    post_call: Hook | None = None
    timeout_s: float = 5.0

    @classmethod
    def load(cls, settings: HookSettings) -> Hooks | None:
        """The view's hooks, imported now (so `config validate` and startup fail early); None when none."""
        if settings.pre_call is None and settings.post_call is None:
            return None
        return cls(
            pre_call=load_hook(settings.pre_call) if settings.pre_call else None,
            post_call=load_hook(settings.post_call) if settings.post_call else None,
            timeout_s=settings.timeout_s,
        )

    async def _run(self, which: str, hook: Hook, *args: Any) -> HookResult | None:
        with anyio.fail_after(self.timeout_s):
            if inspect.iscoroutinefunction(hook):
                outcome = await hook(*args)
            else:
                outcome = await anyio.to_thread.run_sync(lambda: hook(*args), abandon_on_cancel=True)
                if inspect.isawaitable(outcome):
                    outcome = await outcome
        if outcome is not None and not isinstance(outcome, HookResult):
            raise TypeError(f"{which} returned {type(outcome).__name__}; return a HookResult or None")
        return outcome

    async def before(self, call: ToolCall) -> ToolCall | CallToolResult:
        """The call to make (arguments possibly changed), or the envelope that ends it here."""
        if self.pre_call is None:
            return call
        started = time.perf_counter()
        try:
            outcome = await self._run("pre_call", self.pre_call, call)
        except Exception as exc:
            return self._failed("pre_call", call, exc, started)
        if outcome is None:
            return call
        if outcome.abort is not None:
            reason = outcome.abort or "refused by the view's pre_call hook"
            return to_call_result(failure(ErrorCode.CALL_ABORTED, reason, started))
        if outcome.arguments is not None:
            return replace(call, arguments=dict(outcome.arguments))
        return call

    async def after(self, call: ToolCall, result: CallToolResult) -> CallToolResult:
        if self.post_call is None:
            return result
        started = time.perf_counter()
        envelope = result.structured_content if result.structured_content is not None else _text_envelope(result)
        try:
            outcome = await self._run("post_call", self.post_call, call, envelope)
        except Exception as exc:
            return self._failed("post_call", call, exc, started)
        if outcome is None or outcome.result is None:
            return result
        replaced = outcome.result
        text = json.dumps(replaced, ensure_ascii=False, separators=(",", ":"))
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=replaced,
            is_error=not replaced.get("success", False),
        )

    def _failed(self, which: str, call: ToolCall, exc: BaseException, started: float) -> CallToolResult:
        what = "timed out" if isinstance(exc, TimeoutError) else f"raised {type(exc).__name__}"
        logger.error("hook %s %s on %s (view %s): %r", which, what, call.tool, call.view, str(exc)[:300])
        message = f"The view's {which} hook {what}; the call was not completed. The server log has the details."
        return to_call_result(failure(ErrorCode.HOOK_FAILED, message, started))


def _text_envelope(result: CallToolResult) -> dict[str, Any]:
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    return {"success": not result.is_error, "data": {"text": text}}


def _as_call_result(result: HandlerResult) -> CallToolResult | None:
    if isinstance(result, CallToolResult):
        return result
    if isinstance(result, dict):
        try:
            return CallToolResult.model_validate(result)
        except ValueError:
            return None
    return None


@dataclass
class ToolPipeline:
    """Hooks and the call log around one view's tools; `middleware` installs it on the server.

    `passthrough`: names not hooked at the top (composites, meta-tools): they call `call` per step.
    """

    server: MCPServer[Any]
    view: str = "default"
    hooks: Hooks | None = None
    call_log: CallLog | None = None
    passthrough: set[str] = field(default_factory=set)

    def install(self) -> ToolPipeline:
        self.server.middleware.append(self.middleware)
        return self

    async def call(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult:
        """Call a tool by name the way an agent's call runs: through the hooks (composite steps use this)."""
        call = ToolCall(name, arguments, self.view, current_caller.get())
        if self.hooks is not None:
            decided = await self.hooks.before(call)
            if isinstance(decided, CallToolResult):
                return decided
            call = decided
        try:
            raw = await self.server.call_tool(name, call.arguments, context)
        except SkillshelfError as exc:
            raw = to_call_result(failure(exc.code, exc.message, time.perf_counter(), exc.suggestions))
        except Exception as exc:  # unknown tool, bad arguments: the SDK's ToolError
            raw = to_call_result(failure(ErrorCode.VALIDATION_ERROR, str(exc), time.perf_counter()))
        result = _as_call_result(raw) or to_call_result(
            failure(ErrorCode.INTERNAL_ERROR, f"{name} gave no tool result", time.perf_counter())
        )
        return await self.hooks.after(call, result) if self.hooks is not None else result

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or not isinstance(ctx.params, Mapping):
            return await call_next(ctx)
        params = dict(ctx.params)
        name = str(params.get("name", ""))
        arguments = params.get("arguments") or {}
        caller = caller_of(ctx.request) if ctx.request is not None and hasattr(ctx.request, "scope") else None
        token = current_caller.set(caller)
        started = time.perf_counter()
        result: HandlerResult = None
        try:
            call = ToolCall(name, dict(arguments) if isinstance(arguments, dict) else {}, self.view, caller)
            hooked = self.hooks is not None and name not in self.passthrough
            if hooked and self.hooks is not None:
                decided = await self.hooks.before(call)
                if isinstance(decided, CallToolResult):
                    result = decided
                    return result
                if decided is not call:  # pre_call gave new arguments
                    ctx = replace(ctx, params={**params, "arguments": decided.arguments})
                call = decided
            result = await call_next(ctx)
            if hooked and self.hooks is not None and (as_result := _as_call_result(result)) is not None:
                result = await self.hooks.after(call, as_result)
            return result
        finally:
            current_caller.reset(token)
            if self.call_log is not None:
                self._log(name, arguments, caller, started, result)

    def _log(self, name: str, arguments: Any, caller: str | None, started: float, result: HandlerResult) -> None:
        as_result = _as_call_result(result)
        envelope = (as_result.structured_content if as_result is not None else None) or {}
        error = envelope.get("error") if isinstance(envelope.get("error"), dict) else None
        success = as_result is not None and not as_result.is_error
        fallback = "PROTOCOL_ERROR" if as_result is None else "UNKNOWN"
        code = None if success else str((error or {}).get("code") or fallback)
        response_bytes = (
            sum(len(c.text.encode()) for c in as_result.content if isinstance(c, TextContent)) if as_result else 0
        )
        assert self.call_log is not None
        self.call_log.write(
            CallRecord(
                tool=name,
                view=self.view,
                caller=caller,
                duration_ms=(time.perf_counter() - started) * 1000,
                success=success,
                error_code=code,
                request_bytes=len(json.dumps(arguments, separators=(",", ":")).encode()),
                response_bytes=response_bytes,
                skill=skill_of(arguments) if isinstance(arguments, dict) else None,
            )
        )


def check_views(views: Mapping[str, ViewSettings], tool_names: Collection[str] | None = None) -> list[str]:
    """Problems with the views' hooks and composites, for `config validate` (empty: all good).

    Imports every hook; with `tool_names`, also checks that composites call known tools and do not
    take a tool's name.
    """
    problems: list[str] = []
    for name, view in views.items():
        for which in ("pre_call", "post_call"):
            path = getattr(view.hooks, which)
            if path is not None:
                try:
                    load_hook(path)
                except SkillshelfError as exc:
                    problems.append(f"views.{name}.hooks.{which}: {exc.message}")
        if tool_names is None:
            continue
        for composite, config in view.composites.items():
            if composite in tool_names:
                problems.append(f"views.{name}.composites.{composite}: the name of an existing tool")
            steps = list(config.parallel.values()) if config.parallel is not None else list(config.chain or [])
            unknown = sorted({step.tool for step in steps if step.tool not in tool_names})
            if unknown:
                problems.append(f"views.{name}.composites.{composite}: unknown tool(s) {', '.join(unknown)}")
    return problems


def equip_view(
    server: MCPServer[Any], view: str, settings: ViewSettings | None, call_log: CallLog | None
) -> ToolPipeline:
    """Give a view's server its composites, hooks and call log (once, before it serves)."""
    settings = settings or ViewSettings()
    pipeline = ToolPipeline(server, view, Hooks.load(settings.hooks), call_log)
    pipeline.passthrough.update(install_composites(server, settings.composites, pipeline.call))
    return pipeline.install()


# Two hooks shipped as examples: `skillshelf.server.hooks:redact_secrets` and `...:audit`.


@functools.cache
def _redact_text() -> Callable[[str], dict[str, Any]]:
    """The bundled `security/redact-secrets` skill's own function, loaded once from the library."""
    from skillshelf.library import children
    from skillshelf.settings import bundled_library_path

    root = bundled_library_path()
    source = root / "security" / "redact-secrets.py" if root else None
    if source is None or not source.is_file():
        raise RuntimeError("the bundled security/redact-secrets skill is missing from this installation")
    module = children.import_without_bytecode("skillshelf_redact_secrets", source)  # no __pycache__ in the library
    redactor: Callable[[str], dict[str, Any]] = module.redact_secrets
    return redactor


def _redact(value: Any, redact: Callable[[str], dict[str, Any]]) -> tuple[Any, int]:
    if isinstance(value, str):
        found = redact(value)
        return found["text"], int(found["count"])
    if isinstance(value, list):
        pairs = [_redact(item, redact) for item in value]
        return [v for v, _ in pairs], sum(n for _, n in pairs)
    if isinstance(value, dict):
        total = 0
        out = {}
        for key, item in value.items():
            out[key], count = _redact(item, redact)
            total += count
        return out, total
    return value, 0


def redact_secrets(call: ToolCall, envelope: dict[str, Any]) -> HookResult | None:
    """post_call: mask tokens, passwords, keys and URL credentials in every string of a result."""
    redacted, count = _redact(envelope, _redact_text())
    if not count:
        return None
    logger.info("redacted %d secret(s) from %s", count, call.tool)
    return HookResult(result=redacted)


audit_logger = logging.getLogger("skillshelf.audit")


def audit(call: ToolCall) -> None:
    """pre_call: one audit line per call (who, which view, which tool, argument names only)."""
    audit_logger.warning(
        "audit caller=%s view=%s tool=%s args=%s", call.caller or "-", call.view, call.tool, sorted(call.arguments)
    )
