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

Where hooks run: around the tool that actually does the work, on every surface (server/pipeline.py).
A direct call is hooked once; a composite tool is not hooked itself, but each of its steps is (so a
policy on `loadSkill` also holds inside "search then load"), and so is the tool a search-mode
`{view}_call_tool` runs. Reads of content are hooked as calls named after their method
(`resources/read`, `skills/get`, `prompts/get`, with the request's params as arguments, and the result
as `{"success": true, "data": <the MCP result>}`), and the web view's pages as `web/search`,
`web/skill`, `web/file` and `web/library` (the page's content, before it becomes HTML, as `data`): a
post_call hook that masks strings masks those too.

`ToolCall` tells a hook where it is: `tool` (the name the agent used), `own` (the tool's own name: a
policy on `executeSkill` holds under any name a view gives it), `via` (the meta-tool or composite that
made the call, or None), and `values(name)` / `skill_ids` / `paths` give an argument at every place it
can be sent (`skillIds` items, `queries[].category`, the skill and file of a read's `skill://` URI...),
so a policy keyed on `skillId` cannot be walked past through the bulk form or another surface.
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
from mcp.types import CallToolResult, TextContent

from skillshelf.config.hooks import HookSettings
from skillshelf.config.views import ViewSettings
from skillshelf.envelope import failure
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.server.tooling import Places, to_call_result

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolCall:
    """What a hook sees: the tool, its arguments, the view and the caller's token name (if any)."""

    tool: str
    arguments: dict[str, Any]
    view: str
    caller: str | None = None
    own: str = ""  # the tool's own name, whatever the view calls it ("" : the same as `tool`)
    via: str | None = None  # the meta-tool or composite this call was made by
    places: Places | None = field(default=None, repr=False, compare=False)

    def values(self, name: str) -> list[Any]:
        """Every value the argument `name` has in this call: top level, aliases and bulk items."""
        return (self.places or Places()).values_of(self.arguments, name)

    @property
    def skill_ids(self) -> list[str]:
        """The skill ids this call names, wherever they were sent (skillId, skillIds, patternId, the skill
        a read's `skill://` URI names)."""
        return [v for v in self.values("skillId") + self.values("patternId") if isinstance(v, str)]

    @property
    def paths(self) -> list[str]:
        """The skill files this call names (readSkillFile's `path`, the file of a read's `skill://` URI)."""
        return [v for v in self.values("path") if isinstance(v, str)]


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


# Two hooks shipped as examples: `skillshelf.server.hooks:redact_secrets` and `...:audit`.


@functools.cache
def _redact_text() -> Callable[[str], dict[str, Any]]:
    """The bundled `security/redact-secrets` skill's own function, loaded once from the package, without
    writing `__pycache__` into the library folder (a read-only or shared checkout stays as it was)."""
    from skillshelf.library import children
    from skillshelf.settings import bundled_library_path

    root = bundled_library_path()
    source = root / "security" / "redact-secrets.py" if root else None
    if source is None or not source.is_file():
        raise RuntimeError("the bundled security/redact-secrets skill is missing from this installation")
    module = children.import_without_bytecode("skillshelf_redact_secrets", source)
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
    audit_logger.info(
        "audit caller=%s view=%s tool=%s args=%s", call.caller or "-", call.view, call.tool, sorted(call.arguments)
    )
