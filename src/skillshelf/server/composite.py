"""Composite tools: one tool made of others, declared per view in the config file.

```toml
[views.default.composites.findAndLoad]
description = "Search the library and load the best hit's documentation"
inputs.query = {type = "string", description = "What the task is about"}
chain = [
  {name = "search", tool = "searchPatterns", arguments = {query = "{inputs.query}", limit = 1}},
  {name = "load", tool = "loadSkill", arguments = {skillId = "{steps.search.data.hits.0.id}"}},
]
```

- `parallel` steps run at once; the result holds each step's data or `{"error": {...}}`, and the
  call succeeds even when some steps fail (`failed` lists them).
- A `chain` runs in order; a step may use `{inputs.x}` and `{steps.NAME.data...}` (dots walk into
  objects, numbers into lists). The first failing step ends the chain with its error code, a message
  naming the step, and the steps completed so far in `error.details`.
- A template that is a whole string keeps the value's type (`"{inputs.limit}"` stays a number);
  inside a longer string it is interpolated as text. A reference to nothing is a VALIDATION_ERROR.

Steps are called through the view's call pipeline (`CallPipeline.call`), so each step passes every
rule of the view (pins, hooks, rate limit, call log); the generated input schema is a JSON object
schema checked before any step runs.
"""

from __future__ import annotations

import inspect
import json
import re
import time
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from skillshelf.config.composites import CompositeInput, CompositeStep, CompositeTool
from skillshelf.envelope import EnvelopeMetadata, failure
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.server.tooling import CallTool, make_tool, to_call_result
from skillshelf.server.views import LiveView, ViewTool
from skillshelf.tokens import estimate_json_tokens

PYTHON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
}
TEMPLATE = re.compile(r"\{((?:inputs|steps)\.[A-Za-z0-9_.-]+)\}")
COMPOSITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _required(spec: CompositeInput) -> bool:
    return spec.required if spec.required is not None else spec.default is None


def _signature(inputs: dict[str, CompositeInput]) -> inspect.Signature:
    """A signature the SDK turns into a JSON object schema with types, descriptions and defaults."""
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[
                PYTHON_TYPES[spec.type] if _required(spec) else PYTHON_TYPES[spec.type] | None,
                Field(description=spec.description or f"{spec.type} input {name!r}"),
            ],
            default=inspect.Parameter.empty if _required(spec) else spec.default,
        )
        for name, spec in inputs.items()
    ]
    parameters.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context[Any, Any]))
    return inspect.Signature(parameters, return_annotation=CallToolResult)


def resolve_path(reference: str, inputs: dict[str, Any], steps: dict[str, dict[str, Any]]) -> Any:
    """`inputs.x` or `steps.NAME.data.hits.0.id` -> the value, or a VALIDATION_ERROR naming the gap."""
    head, *rest = reference.split(".")
    value: Any = inputs if head == "inputs" else steps
    walked = head
    for part in rest:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"template {{{reference}}}: {walked} has no {part!r}"
                + (" (that step has not run yet, or is not in this chain)" if walked == "steps" else ""),
            )
        walked = f"{walked}.{part}"
    return value


def render(value: Any, inputs: dict[str, Any], steps: dict[str, dict[str, Any]]) -> Any:
    """Fill templates in a step's arguments (strings, and strings nested in lists and objects)."""
    if isinstance(value, str):
        whole = TEMPLATE.fullmatch(value)
        if whole:
            return resolve_path(whole.group(1), inputs, steps)
        return TEMPLATE.sub(lambda m: str(resolve_path(m.group(1), inputs, steps)), value)
    if isinstance(value, list):
        return [render(item, inputs, steps) for item in value]
    if isinstance(value, dict):
        return {key: render(item, inputs, steps) for key, item in value.items()}
    return value


def _step_outcome(result: CallToolResult) -> dict[str, Any]:
    envelope = result.structured_content
    if envelope is None:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        return {"success": False, "error": {"code": ErrorCode.INTERNAL_ERROR, "message": text[:500]}}
    return dict(envelope)


def _step_error(name: str, tool: str, outcome: dict[str, Any]) -> dict[str, Any]:
    error = outcome.get("error") or {}
    return {"code": error.get("code", ErrorCode.INTERNAL_ERROR), "message": error.get("message", ""), "tool": tool}


def _success(data: dict[str, Any], started: float, count: int) -> CallToolResult:
    metadata = EnvelopeMetadata(
        tokens_used=estimate_json_tokens(data),
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
        results_count=count,
    )
    wire = {"success": True, "data": data, "metadata": metadata.model_dump(by_alias=True, exclude_none=True)}
    text = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=wire, is_error=False)


async def run_parallel(
    composite: str,
    steps: dict[str, CompositeStep],
    inputs: dict[str, Any],
    call: CallTool,
    context: Context[Any, Any] | None,
) -> CallToolResult:
    started = time.perf_counter()
    results: dict[str, Any] = {}
    failed: list[str] = []

    async def one(name: str, step: CompositeStep) -> None:
        try:
            arguments = render(step.arguments, inputs, {})
        except SkillshelfError as exc:
            results[name] = {"error": {"code": exc.code, "message": exc.message, "tool": step.tool}}
            failed.append(name)
            return
        outcome = _step_outcome(await call(step.tool, arguments, context, via=composite))
        if outcome.get("success"):
            results[name] = outcome.get("data")
        else:
            results[name] = {"error": _step_error(name, step.tool, outcome)}
            failed.append(name)

    async with anyio.create_task_group() as group:
        for name, step in steps.items():
            group.start_soon(one, name, step)
    ordered = {name: results[name] for name in steps}
    return _success({"steps": ordered, "failed": sorted(failed)}, started, len(steps) - len(failed))


async def run_chain(
    composite: str,
    steps: list[Any],
    inputs: dict[str, Any],
    call: CallTool,
    context: Context[Any, Any] | None,
) -> CallToolResult:
    started = time.perf_counter()
    done: dict[str, dict[str, Any]] = {}
    for step in steps:
        try:
            arguments = render(step.arguments, inputs, done)
        except SkillshelfError as exc:
            outcome: dict[str, Any] = {"success": False, "error": {"code": exc.code, "message": exc.message}}
        else:
            outcome = _step_outcome(await call(step.tool, arguments, context, via=composite))
        if not outcome.get("success"):
            error = _step_error(step.name, step.tool, outcome)
            message = f"{composite}: step {step.name!r} ({step.tool}) failed: {error['message']}"
            details = {"step": step.name, "completed": {k: v.get("data") for k, v in done.items()}}
            return to_call_result(failure(error["code"], message, started, details=details))
        done[step.name] = outcome
    data = {"steps": {k: v.get("data") for k, v in done.items()}, "result": done[steps[-1].name].get("data")}
    return _success(data, started, len(done))


def composite_tool(name: str, config: CompositeTool, call: CallTool) -> Tool:
    """A tool running `config` through `call` (a view's "call a tool by name", hooks included)."""

    async def composite(**arguments: Any) -> CallToolResult:
        context = arguments.pop("ctx", None)
        inputs = {k: (v if v is not None else config.inputs[k].default) for k, v in arguments.items()}
        if config.parallel is not None:
            return await run_parallel(name, config.parallel, inputs, call, context)
        assert config.chain is not None
        return await run_chain(name, config.chain, inputs, call, context)

    composite.__signature__ = _signature(config.inputs)  # type: ignore[attr-defined]
    composite.__annotations__ = {
        p.name: p.annotation
        for p in composite.__signature__.parameters.values()  # type: ignore[attr-defined]
    } | {"return": CallToolResult}
    composite.__doc__ = config.description or f"Composite tool {name}"
    return make_tool(composite, name, config.description or name, COMPOSITE)


def install_composites(live: LiveView, composites: dict[str, CompositeTool], call: CallTool) -> list[str]:
    """Serve a view's composites beside its tools (before it serves); their names, for the pipeline's passthrough."""
    for name, config in composites.items():
        if live.get(name) is not None:
            raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"composite {name!r} has the name of an existing tool")
        unknown = [s.tool for s in _steps(config) if live.get(s.tool) is None]
        if unknown:
            listed = ", ".join(sorted(set(unknown)))
            raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"composite {name!r} calls unknown tool(s): {listed}")
        live.add(ViewTool.plain(composite_tool(name, config, call)))
    return list(composites)


def _steps(config: CompositeTool) -> list[CompositeStep]:
    return list(config.parallel.values()) if config.parallel is not None else list(config.chain or [])
