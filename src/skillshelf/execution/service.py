"""executeSkill: validate, plan, run in a limited child process, and report what happened."""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio

from skillshelf.config.execution_cap import ExecutionCap
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.execution import sandbox
from skillshelf.execution.containment import CgroupSupport, Limits, RunCgroup
from skillshelf.execution.models import DryRunResult, ExecutionResult, RunDescription, RunPolicy
from skillshelf.execution.plan import RunPlan, plan_for
from skillshelf.execution.policy import Grant, grant_for
from skillshelf.execution.runner import (
    COPY_PREFIX,
    WORK_DIR_MAX_ENTRIES,
    ProgressCallback,
    RunOutcome,
    make_work_dir,
    remove_work_dir,
    run_child,
)
from skillshelf.execution.schema import validation_errors
from skillshelf.library import children
from skillshelf.library.access.reader import SkillReader, StatusReader
from skillshelf.library.usage.store import UsageUnavailable
from skillshelf.settings import ExecutionSettings

logger = logging.getLogger(__name__)
T = TypeVar("T")

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


MB = 1024 * 1024


def limits_for(settings: ExecutionSettings, timeout_s: float | None, grant: Grant) -> Limits:
    """The settings' limits, narrowed by the run's grant (its policy within the view's cap) and the call's timeout."""
    timeout = min(timeout_s, grant.timeout_s) if timeout_s else grant.timeout_s
    return Limits(
        timeout_s=timeout,
        cpu_s=min(settings.cpu_s, max(1, int(timeout) + 1)),
        memory_bytes=grant.memory_mb * MB,
        max_processes=settings.max_processes,
        max_output_bytes=settings.max_output_bytes,
        max_stderr_bytes=settings.max_stderr_bytes,
        run_memory_bytes=settings.run_memory_mb * MB,
        work_dir_bytes=settings.work_dir_mb * MB,
        tmp_bytes=settings.tmp_mb * MB,
    )


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
    plan: RunPlan, limits: Limits, cgroup: CgroupSupport, isolation: sandbox.Isolation, grant: Grant
) -> RunDescription:
    sized = isolation.sandboxed and isolation.sized_tmpfs
    return RunDescription(
        interpreter=plan.interpreter,
        entry=plan.entry,
        timeout_s=limits.timeout_s,
        cpu_s=limits.cpu_s,
        memory_mb=(limits.memory_bytes // MB) if limits.memory_bytes else None,
        run_memory_mb=limits.run_memory_bytes // MB if cgroup.memory and limits.run_memory_bytes else None,
        max_processes=limits.max_processes,
        max_output_bytes=limits.max_output_bytes,
        work_dir_mb=limits.work_dir_bytes // MB,
        work_dir_limit="tmpfs" if sized else "checked",
        tmp_mb=limits.tmp_bytes // MB if sized else None,
        process_cgroup=cgroup.pids,
        isolation=isolation.kind,
        isolation_note=isolation.note,
        network=grant.network or not isolation.sandboxed,
        policy=RunPolicy(
            declared=grant.declared,
            network="any" if grant.network else "none",
            read_paths=[str(path) for path in grant.read_paths],
            env=list(children.passed_names(grant.env)),
        ),
    )


def prepare(
    library: SkillReader,
    settings: ExecutionSettings,
    skill_id: str,
    payload: Any,
    script: str | None,
    args: list[str] | None = None,
    cap: ExecutionCap | None = None,
) -> tuple[RunPlan, str, Grant]:
    """The plan, the JSON input and what the run is granted, after every check that needs no process: a policy
    that asks for more than the configuration and the view (`cap`) allow is refused here, before anything runs."""
    skill = library.find(skill_id)
    plan = plan_for(skill, library, script, args)
    grant = grant_for(plan.skill_id, plan.policy, settings, cap)
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
    return plan, encoded, grant


def dry_run(
    library: SkillReader,
    settings: ExecutionSettings,
    skill_id: str,
    payload: Any,
    script: str | None,
    timeout_s: float | None,
    args: list[str] | None = None,
    cap: ExecutionCap | None = None,
) -> DryRunResult:
    plan, _, grant = prepare(library, settings, skill_id, payload, script, args, cap)
    limits = limits_for(settings, timeout_s, grant)
    isolation = sandbox.isolation(settings.bubblewrap)
    return DryRunResult(
        skill_id=plan.skill_id,
        input_valid=True,
        input_schema=plan.input_schema,
        schema_source=plan.schema_source,
        execution_enabled=settings.enabled,
        would_run=describe(plan, limits, RunCgroup.available(), isolation, grant),
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
    cap: ExecutionCap | None = None,
) -> ExecutionResult:
    """Run the skill; an agent's run counts as a use (source `execute`), a curator's `skillshelf run` does not.

    Everything that can block (waiting for the index, reading the skill, probing bubblewrap, making
    the cgroups and the working directory, removing it, recording the use) runs off the event loop:
    the server answers other calls meanwhile.
    """
    run = await off_loop(partial(_set_up, library, settings, skill_id, payload, script, timeout_s, args, cap))
    try:
        outcome = await run_child(
            run.argv,
            run.stdin,
            env=children.skill_environment(run.work_dir, run.plan.skill_dir, run.grant.env),
            work_dir=run.work_dir,
            limits=run.limits,
            cgroup=run.cgroup,
            on_progress=on_progress,
            check_work_dir=run.ran.work_dir_limit == "checked",
        )
    finally:
        with anyio.CancelScope(shield=True):
            if run.cgroup is not None:
                await run.cgroup.remove()
            await off_loop(partial(_remove_folders, run))
    return await off_loop(partial(_finish, library, run, outcome, record_use))


async def off_loop(work: Callable[[], T]) -> T:
    """Run blocking work (files, SQLite, waiting for the index, starting a probe) in a worker thread,
    never on the event loop. One place, so the server's shared helper can replace it."""
    return await anyio.to_thread.run_sync(work)


@dataclass(frozen=True)
class _Run:
    plan: RunPlan
    stdin: bytes
    limits: Limits
    work_dir: Path
    cgroup: RunCgroup | None
    argv: list[str]
    ran: RunDescription
    grant: Grant
    copy_dirs: list[Path]  # where the skill's approved files were copied for this run (none: it runs from the library)


def _remove_folders(run: _Run) -> None:
    for folder in (run.work_dir, *run.copy_dirs):
        remove_work_dir(folder)


def _set_up(
    library: SkillReader,
    settings: ExecutionSettings,
    skill_id: str,
    payload: Any,
    script: str | None,
    timeout_s: float | None,
    args: list[str] | None,
    cap: ExecutionCap | None,
) -> _Run:
    """Every check, then the working directory and the cgroups (blocking: called off the loop)."""
    check_allowed(settings, skill_id)
    plan, encoded, grant = prepare(library, settings, skill_id, payload, script, args, cap)
    limits = limits_for(settings, timeout_s, grant)
    isolation = isolation_for(settings, plan.skill_id)
    work_dir, copy_dirs = make_work_dir(), list[Path]()
    cgroup = None

    def copy_dir() -> Path:  # made only when the skill runs from a copy
        copy_dirs.append(make_work_dir(COPY_PREFIX))
        return copy_dirs[-1]

    try:
        # The last check before the child starts: under require_verified or require_signed the run executes from a
        # copy of the approved files, digested as it was made, so a file changed in the library since (even while
        # the child starts) never runs, nor anything beside the skill's own files.
        copied = library.run_copy(library.find(plan.skill_id), copy_dir)
        plan = plan if copied is None else plan.in_copy(copied)
        cgroup = RunCgroup.create(limits.max_processes, limits.run_memory_bytes)
        got = CgroupSupport(pids=bool(cgroup and cgroup.limits_pids), memory=bool(cgroup and cgroup.limits_memory))
        ran = describe(plan, limits, got, isolation, grant)
        argv = _argv(plan, limits, grant, isolation, work_dir, cgroup)
    except BaseException:
        if cgroup is not None:
            cgroup.discard()
        for folder in (work_dir, *copy_dirs):
            remove_work_dir(folder)
        raise
    return _Run(plan, encoded.encode(), limits, work_dir, cgroup, argv, ran, grant, copy_dirs)


def _finish(library: SkillReader, run: _Run, outcome: RunOutcome, record_use: bool) -> ExecutionResult:
    """The result, and the use recorded (blocking: SQLite may wait on another process's lock)."""
    scrub = _Scrubber(library, run.plan, run.work_dir)
    result = _interpret(run.plan, outcome, run.limits, run.ran, scrub)
    try:  # the run happened and its output is the answer: a usage file that cannot record must not lose it
        if record_use:
            library.record_use(run.plan.skill_id, None, "executeSkill", source="execute")
    except UsageUnavailable as exc:
        logger.warning("the run of %s is not counted as a use: %s", run.plan.skill_id, exc.message)
    return result


def _argv(
    plan: RunPlan,
    limits: Limits,
    grant: Grant,
    isolation: sandbox.Isolation,
    work_dir: Path,
    cgroup: RunCgroup | None,
) -> list[str]:
    """The child's command line: `_child.py` directly, or bubblewrap running `_child.py` (limits, then
    the skill) inside the sandbox, started by a first `_child.py` that joins the run's cgroups."""
    procs = [str(path) for path in cgroup.procs_files] if cgroup else None
    node = plan.interpreter == "node"
    if isolation.bwrap is None:
        children.make_nondumpable()  # the skill shares our user: keep /proc/<server>/environ from it
        limited = limits.for_child(node=node)
        return plan.argv(json.dumps(plan.child_config(limited, procs, node_heap_mb=grant.memory_mb)))
    limited = limits.for_child(node=node, sandboxed=True)
    inner = plan.argv(json.dumps(plan.child_config(limited, None, node_heap_mb=grant.memory_mb)))
    command = sandbox.bwrap_argv(
        isolation,
        work_dir=work_dir,
        work_dir_bytes=limits.work_dir_bytes,
        tmp_bytes=limits.tmp_bytes,
        read_only=[*plan.exposed(), *grant.read_paths],
        runtimes=sandbox.runtime_dirs(plan.binaries()),
        network=grant.network,
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
    if outcome.work_dir_over:
        raise SkillshelfError(
            ErrorCode.SKILL_EXECUTION_FAILED,
            f"{plan.skill_id} wrote more than {ran.work_dir_mb} MB (or {WORK_DIR_MAX_ENTRIES} files) into its "
            "working directory and was stopped (execution.work_dir_mb).",
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
        raise SkillshelfError(
            ErrorCode.SKILL_EXECUTION_FAILED,
            _exit_message(plan, outcome, stderr, ran.isolation == "bubblewrap"),
            details=details,
        )
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
        raise SkillshelfError(
            ErrorCode.SKILL_EXECUTION_FAILED,
            _exit_message(plan, outcome, stderr, ran.isolation == "bubblewrap"),
            details=details,
        )
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


def _exit_message(plan: RunPlan, outcome: RunOutcome, stderr: str, sandboxed: bool) -> str:
    killed_by = outcome.signal_name or (_sandbox_signal(outcome.exit_code) if sandboxed else None)
    how = f"was killed by {killed_by}" if killed_by else f"exited with status {outcome.exit_code}"
    if killed_by in ("SIGKILL", "SIGXCPU"):
        how += " (a CPU, memory or process limit, most likely)"
    last = stderr.strip().splitlines()[-1] if stderr.strip() else "no error output"
    return f"{plan.skill_id} {how}: {last}"


def _sandbox_signal(exit_code: int | None) -> str | None:
    """bubblewrap exits with 128 + N when the skill inside was killed by signal N."""
    if exit_code is None or not 128 < exit_code < 128 + 65:
        return None
    try:
        return signal.Signals(exit_code - 128).name
    except ValueError:
        return None


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

    def __init__(self, library: StatusReader, plan: RunPlan, work_dir: Path) -> None:
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
