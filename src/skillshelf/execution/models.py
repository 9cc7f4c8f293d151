"""Wire models of executeSkill."""

from __future__ import annotations

from typing import Any, Literal

from skillshelf.envelope import WireModel


class RunPolicy(WireModel):
    """The run policy applied: what the skill declared (or the configuration's defaults), within what is allowed.

    Under bubblewrap the network and the paths are enforced by the sandbox; without it only the environment,
    the time and the memory are (`isolation` says which)."""

    declared: bool  # the skill declares a `policy`; False: it runs with what the configuration gives every skill
    network: Literal["none", "any"]
    read_paths: list[str]  # bound read-only in the sandbox
    env: list[str]  # the variables it receives by name from the server's environment (those that are set)


class RunDescription(WireModel):
    """What a run does (or would do): interpreter, entry point and the limits it runs under."""

    interpreter: str
    entry: str  # e.g. "retry_backoff(**input)" or "scripts/check.py"
    timeout_s: float
    cpu_s: int
    memory_mb: int | None  # each process's address space (RLIMIT_AS)
    run_memory_mb: int | None = None  # the whole run's memory (a memory cgroup); None: none could be made here
    max_processes: int
    max_output_bytes: int
    work_dir_mb: int  # the working directory's total size
    work_dir_limit: Literal["tmpfs", "checked"]  # a sized tmpfs refuses writes; "checked": the run is stopped
    tmp_mb: int | None = None  # the sandbox's /tmp (a tmpfs); None without a sized one (no sandbox, or an old bwrap)
    process_cgroup: bool  # a pids cgroup contains the run (see docs/security.md)
    isolation: Literal["bubblewrap", "rlimits-only"]  # a bubblewrap sandbox, or the limits above alone
    isolation_note: str  # what the sandbox hides, or why there is none
    network: bool  # whether the skill can open network connections
    policy: RunPolicy | None = None


class ExecutionResult(WireModel):
    skill_id: str
    output: Any
    output_format: Literal["json", "text"]  # text: stdout was not JSON and is returned as it came
    exit_code: int
    duration_ms: float
    stdout_truncated: bool
    stderr_truncated: bool
    stderr_tail: str | None = None
    ran: RunDescription


class DryRunResult(WireModel):
    skill_id: str
    dry_run: bool = True
    input_valid: bool
    input_schema: dict[str, Any] | None = None
    schema_source: Literal["declared", "derived"] | None = None
    execution_enabled: bool
    would_run: RunDescription
