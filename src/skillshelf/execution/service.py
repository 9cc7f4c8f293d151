"""executeSkill: validate, plan, run in a limited child process, and report what happened."""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

import anyio

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.execution import sandbox
from skillshelf.execution.containment import Limits, PidsCgroup, hide_server_from_skills
from skillshelf.execution.models import DryRunResult, ExecutionResult, RunDescription
from skillshelf.execution.plan import RunPlan, plan_for
from skillshelf.execution.runner import (
    ProgressCallback,
    RunOutcome,
    child_environment,
    make_work_dir,
    remove_work_dir,
    run_child,
)
from skillshelf.execution.schema import validation_errors
from skillshelf.library.access.reader import SkillReader
from skillshelf.library.usage.store import UsageUnavailable
from skillshelf.settings import ExecutionSettings

logger = logging.getLogger(__name__)

MAX_INPUT_BYTES = 1024 * 1024
STDERR_TAIL_CHARS = 2000
ENABLE_HINT = (
    "Skill execution is off. The user can enable it by starting skillshelf with --allow-exec, setting "
    "SKILLSHELF_ALLOW_EXEC=1, or `enabled = true` under [execution] in the config file. Until then, read the "
    "skill with loadSkill and apply it yourself."
)


def check_allowed(settings: ExecutionSettings, skill_id: str) -> None:
    if not settings.enabled:
        raise SkillshelfError(ErrorCode.EXECUTION_DISABLED, ENABLE_HINT)
    if settings.allow and not any(fnmatch.fnmatchcase(skill_id, pattern) for pattern in settings.allow):
        raise SkillshelfError(
            ErrorCode.EXECUTION_DISABLED,
            f"{skill_id!r} is not in the execution allow-list ({', '.join(settings.allow)}). Read it with loadSkill "
            "and apply it yourself, or ask the user to allow it.",
        )


def limits_for(settings: ExecutionSettings, timeout_s: float | None) -> Limits:
    timeout = min(timeout_s, settings.timeout_s) if timeout_s else settings.timeout_s
    return Limits(
        timeout_s=timeout,
        cpu_s=min(settings.cpu_s, max(1, int(timeout) + 1)),
        memory_bytes=settings.memory_mb * 1024 * 1024,
        max_processes=settings.max_processes,
        max_output_bytes=settings.max_output_bytes,
        max_stderr_bytes=settings.max_stderr_bytes,
    )


def network_allowed(settings: ExecutionSettings, skill_id: str) -> bool:
    return any(fnmatch.fnmatchcase(skill_id, pattern) for pattern in settings.network)


def isolation_for(settings: ExecutionSettings, skill_id: str) -> sandbox.Isolation:
    """The isolation this run gets; with require_isolation, no sandbox means no run."""
    isolation = sandbox.isolation(settings.bubblewrap)
    if settings.require_isolation and not isolation.sandboxed:
        raise SkillshelfError(
            ErrorCode.EXECUTION_DISABLED,
            f"{skill_id} was not run: execution requires isolation (require_isolation = true) and there is none "
            f"here: {isolation.note}. Read the skill with loadSkill and apply it yourself.",
            details={"isolation": isolation.kind, "isolationNote": isolation.note},
        )
    return isolation


def describe(
    plan: RunPlan, limits: Limits, cgroup: bool, isolation: sandbox.Isolation, network: bool
) -> RunDescription:
    return RunDescription(
        interpreter=plan.interpreter,
        entry=plan.entry,
        timeout_s=limits.timeout_s,
        cpu_s=limits.cpu_s,
        memory_mb=(limits.memory_bytes // (1024 * 1024)) if limits.memory_bytes else None,
        max_processes=limits.max_processes,
        max_output_bytes=limits.max_output_bytes,
        process_cgroup=cgroup,
        isolation=isolation.kind,
        isolation_note=isolation.note,
        network=network or not isolation.sandboxed,
    )


def prepare(
    library: SkillReader,
    settings: ExecutionSettings,
    skill_id: str,
    payload: Any,
    script: str | None,
    args: list[str] | None = None,
) -> tuple[RunPlan, str]:
    """The plan and the JSON input, after every check that needs no process."""
    skill = library.find(skill_id)
    plan = plan_for(skill, library, script, args)
    encoded = json.dumps(payload, ensure_ascii=False)
    if len(encoded.encode()) > MAX_INPUT_BYTES:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"input is over {MAX_INPUT_BYTES // 1024} KiB; send less")
    if plan.input_schema is not None:
        problems = validation_errors(plan.input_schema, payload)
        if problems:
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"input does not match {plan.skill_id}'s input schema: " + "; ".join(problems),
                details={"inputSchema": plan.input_schema, "problems": problems},
            )
    return plan, encoded


def dry_run(
    library: SkillReader,
    settings: ExecutionSettings,
    skill_id: str,
    payload: Any,
    script: str | None,
    timeout_s: float | None,
    args: list[str] | None = None,
) -> DryRunResult:
    plan, _ = prepare(library, settings, skill_id, payload, script, args)
    limits = limits_for(settings, timeout_s)
    isolation = sandbox.isolation(settings.bubblewrap)
    return DryRunResult(
        skill_id=plan.skill_id,
        input_valid=True,
        input_schema=plan.input_schema,
        schema_source=plan.schema_source,
        execution_enabled=settings.enabled,
        would_run=describe(plan, limits, PidsCgroup.available(), isolation, network_allowed(settings, plan.skill_id)),
    )


async def execute_skill(
    library: SkillReader,
    settings: ExecutionSettings,
    skill_id: str,
    payload: Any,
    script: str | None = None,
    timeout_s: float | None = None,
    on_progress: ProgressCallback | None = None,
    args: list[str] | None = None,
    record_use: bool = True,
) -> ExecutionResult:
    """Run the skill; an agent's run counts as a use (source `execute`), a curator's `skillshelf run` does not."""
    check_allowed(settings, skill_id)
    plan, encoded = prepare(library, settings, skill_id, payload, script, args)
    limits = limits_for(settings, timeout_s)
    isolation = await anyio.to_thread.run_sync(isolation_for, settings, plan.skill_id)
    network = network_allowed(settings, plan.skill_id)
    work_dir = make_work_dir()
    cgroup = PidsCgroup.create(limits.max_processes)
    try:
        outcome = await run_child(
            _argv(plan, limits, settings, isolation, network, work_dir, cgroup),
            encoded.encode(),
            env=child_environment(work_dir, plan.skill_dir, settings.env),
            work_dir=work_dir,
            limits=limits,
            cgroup=cgroup,
            on_progress=on_progress,
        )
    finally:
        with anyio.CancelScope(shield=True):
            if cgroup is not None:
                await cgroup.remove()
        remove_work_dir(work_dir)
    scrub = _Scrubber(library, plan, work_dir)
    ran = describe(plan, limits, cgroup is not None, isolation, network)
    result = _interpret(plan, outcome, limits, ran, scrub)
    try:  # the run happened and its output is the answer: a usage file that cannot record must not lose it
        if record_use:
            library.record_use(plan.skill_id, None, "executeSkill", source="execute")
    except UsageUnavailable as exc:
        logger.warning("the run of %s is not counted as a use: %s", plan.skill_id, exc.message)
    return result


def _argv(
    plan: RunPlan,
    limits: Limits,
    settings: ExecutionSettings,
    isolation: sandbox.Isolation,
    network: bool,
    work_dir: Path,
    cgroup: PidsCgroup | None,
) -> list[str]:
    """The child's command line: `_child.py` directly, or bubblewrap running `_child.py` (limits, then
    the skill) inside the sandbox, started by a first `_child.py` that joins the run's cgroup."""
    procs = str(cgroup.procs_file) if cgroup else None
    limited = limits.for_child(node=plan.interpreter == "node")
    if isolation.bwrap is None:
        hide_server_from_skills()  # the skill shares our user: keep /proc/<server>/environ from it
        return plan.argv(json.dumps(plan.child_config(limited, procs, node_heap_mb=settings.memory_mb)))
    inner = plan.argv(json.dumps(plan.child_config(limited, None, node_heap_mb=settings.memory_mb)))
    command = sandbox.bwrap_argv(
        isolation.bwrap,
        work_dir=work_dir,
        read_only=plan.exposed(),
        runtimes=sandbox.runtime_dirs(plan.binaries()),
        network=network,
        command=inner,
    )
    if procs is None:
        return command
    # The cgroup is joined outside the sandbox (it has no /sys), before bubblewrap starts.
    return plan.argv(json.dumps({"mode": "exec", "limits": {}, "cgroup_procs": procs, "argv": command}))


def _interpret(
    plan: RunPlan, outcome: RunOutcome, limits: Limits, ran: RunDescription, scrub: _Scrubber
) -> ExecutionResult:
    stderr = scrub(outcome.stderr_tail.decode("utf-8", errors="replace"))[-STDERR_TAIL_CHARS:]
    details: dict[str, Any] = {
        "exitCode": outcome.exit_code,
        "signal": outcome.signal_name,
        "durationMs": round(outcome.duration_s * 1000, 1),
        "stdoutTruncated": outcome.output_limited,
        "stderrTruncated": outcome.stderr_truncated,
        "stderrTail": stderr or None,
        "isolation": ran.isolation,
    }
    if outcome.timed_out:
        raise SkillshelfError(
            ErrorCode.EXECUTION_TIMEOUT,
            f"{plan.skill_id} ran past its {limits.timeout_s:g} s limit and was stopped. Pass a smaller input, or a "
            "larger timeoutS if the configured maximum allows.",
            details=details,
        )
    if outcome.output_limited:
        raise SkillshelfError(
            ErrorCode.SKILL_EXECUTION_FAILED,
            f"{plan.skill_id} wrote more than {limits.max_output_bytes} bytes to stdout and was stopped.",
            details=details,
        )
    stdout = outcome.stdout.decode("utf-8", errors="replace")
    parsed = _json_or_none(stdout)
    if plan.mode == "call" or (plan.interpreter == "node" and plan.function is not None):
        return _function_result(plan, outcome, parsed, details, ran, stderr)
    if outcome.exit_code != 0:
        raise SkillshelfError(ErrorCode.SKILL_EXECUTION_FAILED, _exit_message(plan, outcome, stderr), details=details)
    if parsed is None:
        return _succeeded(plan, outcome, scrub(stdout), "text", ran, stderr)
    return _succeeded(plan, outcome, parsed, "json", ran, stderr)


def _function_result(
    plan: RunPlan,
    outcome: RunOutcome,
    parsed: Any,
    details: dict[str, Any],
    ran: RunDescription,
    stderr: str,
) -> ExecutionResult:
    if isinstance(parsed, dict) and "error" in parsed and isinstance(parsed["error"], dict):
        error = parsed["error"]
        details["exception"] = error
        raise SkillshelfError(
            ErrorCode.SKILL_EXECUTION_FAILED,
            f"{plan.skill_id} raised {error.get('type', 'an error')}: {error.get('message', '')}".rstrip(": "),
            details=details,
        )
    if outcome.exit_code != 0 or not (isinstance(parsed, dict) and "result" in parsed):
        raise SkillshelfError(ErrorCode.SKILL_EXECUTION_FAILED, _exit_message(plan, outcome, stderr), details=details)
    return _succeeded(plan, outcome, parsed["result"], "json", ran, stderr)


def _succeeded(
    plan: RunPlan,
    outcome: RunOutcome,
    output: Any,
    output_format: Literal["json", "text"],
    ran: RunDescription,
    stderr: str,
) -> ExecutionResult:
    return ExecutionResult(
        skill_id=plan.skill_id,
        output=output,
        output_format=output_format,
        exit_code=0,
        duration_ms=round(outcome.duration_s * 1000, 1),
        stdout_truncated=False,
        stderr_truncated=outcome.stderr_truncated,
        stderr_tail=stderr or None,
        ran=ran,
    )


def _exit_message(plan: RunPlan, outcome: RunOutcome, stderr: str) -> str:
    how = f"was killed by {outcome.signal_name}" if outcome.signal_name else f"exited with status {outcome.exit_code}"
    if outcome.signal_name in ("SIGKILL", "SIGXCPU"):
        how += " (a CPU, memory or process limit, most likely)"
    last = stderr.strip().splitlines()[-1] if stderr.strip() else "no error output"
    return f"{plan.skill_id} {how}: {last}"


def _json_or_none(text: str) -> Any:
    stripped = text.strip()
    if not stripped:
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


class _Scrubber:
    """Removes paths outside the library from text a skill produced (tracebacks name files)."""

    def __init__(self, library: SkillReader, plan: RunPlan, work_dir: Path) -> None:
        replacements = [
            (str(work_dir), "<workdir>"),
            (os.path.realpath(work_dir), "<workdir>"),
            (str(plan.skill_dir), plan.skill_id),
            *((str(root), "<library>") for root in library.roots()),
            *((prefix, "<python>") for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}),
            (str(Path(__file__).resolve().parent), "<skillshelf>"),
            (str(Path.home()), "~"),
        ]
        # Longest first, so a path inside another is replaced as a whole.
        ordered = sorted(
            {old: new for old, new in replacements if old and old != "/"}.items(), key=lambda i: -len(i[0])
        )
        self.pattern = re.compile("|".join(re.escape(old) for old, _ in ordered)) if ordered else None
        self.mapping = dict(ordered)

    def __call__(self, text: str) -> str:
        if self.pattern is None:
            return text
        return self.pattern.sub(lambda m: self.mapping[m.group(0)], text)
