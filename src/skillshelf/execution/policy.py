"""What one run of a skill is granted: its declared policy, within what the configuration and the view allow.

The ceiling is the `[execution]` settings (`network` patterns, `env` names, `read_paths` folders,
`timeout_s`, `memory_mb`), narrowed by the view's `[views.NAME.execution]` cap. A skill that declares
a policy gets exactly what it declares; one that asks for more than the ceiling is refused here, before
anything starts, with every excess named. A skill that declares none gets the ceiling as before (the
configured names, the network if `execution.network` names it, no extra paths).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from skillshelf.config.execution_cap import ExecutionCap
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.skill.policy import PolicyError, SkillPolicy, policy_of
from skillshelf.settings import ExecutionSettings

VIEW_CAP = "the view's cap ([views.NAME.execution])"


@dataclass(frozen=True)
class Grant:
    """What the run gets; reported in `ran.policy`."""

    declared: bool
    network: bool
    env: tuple[str, ...]
    read_paths: tuple[Path, ...]
    timeout_s: float
    memory_mb: int


def declared_policy(skill_id: str, frontmatter: dict[str, object]) -> SkillPolicy:
    """The skill's policy, or NOT_EXECUTABLE naming what is wrong with it (nothing runs)."""
    try:
        return policy_of(dict(frontmatter))
    except PolicyError as exc:
        raise SkillshelfError(
            ErrorCode.NOT_EXECUTABLE,
            f"{skill_id!r} cannot run: {exc}. Fix its frontmatter (`skillshelf check` shows it).",
        ) from None


def grant_for(skill_id: str, policy: SkillPolicy, settings: ExecutionSettings, cap: ExecutionCap | None) -> Grant:
    """The run's grant; EXECUTION_DISABLED naming each thing the policy asks beyond what is allowed."""
    problems: list[str] = []
    network = _network(skill_id, policy, settings, cap, problems)
    env = _env(policy, settings, cap, problems)
    paths = _read_paths(policy, settings, cap, problems)
    timeout = _ceiling(policy.timeout_s, settings.timeout_s, cap.timeout_s if cap else None, "timeout_s", problems)
    memory = _ceiling(policy.memory_mb, settings.memory_mb, cap.memory_mb if cap else None, "memory_mb", problems)
    if problems:
        raise SkillshelfError(
            ErrorCode.EXECUTION_DISABLED,
            f"{skill_id} was not run: its policy asks for more than is allowed here: {'; '.join(problems)}. "
            "Ask the user to allow it (docs/security.md, a skill's run policy), or read the skill with loadSkill "
            "and apply it yourself.",
            details={"policy": problems},
        )
    return Grant(policy.declared, network, env, paths, timeout, int(memory))


def _network(
    skill_id: str, policy: SkillPolicy, settings: ExecutionSettings, cap: ExecutionCap | None, problems: list[str]
) -> bool:
    configured = any(fnmatch.fnmatchcase(skill_id, pattern) for pattern in settings.network)
    allowed = configured and not (cap is not None and cap.network == "none")
    if not policy.declared:
        return allowed
    if policy.network == "any" and not allowed:
        where = f"{VIEW_CAP} says none" if configured else "execution.network does not name it"
        problems.append(f"network any ({where})")
    return policy.network == "any" and allowed


def _env(
    policy: SkillPolicy, settings: ExecutionSettings, cap: ExecutionCap | None, problems: list[str]
) -> tuple[str, ...]:
    allowed = [name for name in settings.env if cap is None or cap.env is None or name in cap.env]
    if not policy.declared:
        return tuple(allowed)
    for name in policy.env:
        if name not in allowed:
            where = f"{VIEW_CAP} leaves it out" if name in settings.env else "execution.env does not list it"
            problems.append(f"the variable {name} ({where})")
    return policy.env


def _read_paths(
    policy: SkillPolicy, settings: ExecutionSettings, cap: ExecutionCap | None, problems: list[str]
) -> tuple[Path, ...]:
    granted: list[Path] = []
    for declared in policy.read_paths:
        path = Path(declared)
        real = Path(os.path.realpath(path))
        if not path.exists():
            problems.append(f"read_paths {declared} (it does not exist here)")
        elif real != path:
            problems.append(f"read_paths {declared} (it resolves to {real}: name the real path)")
        elif not _under(real, settings.read_paths):
            problems.append(f"read_paths {declared} (not under a folder of execution.read_paths)")
        elif cap is not None and cap.read_paths is not None and not _under(real, cap.read_paths):
            problems.append(f"read_paths {declared} (not under a folder of {VIEW_CAP})")
        else:
            granted.append(real)
    return tuple(granted)


def _under(path: Path, folders: list[Path]) -> bool:
    return any(path.is_relative_to(os.path.realpath(folder)) for folder in folders)


def _ceiling(asked: float | None, configured: float, view: float | None, key: str, problems: list[str]) -> float:
    """The limit the run gets: what it asks, within the configured maximum and the view's cap."""
    most = min(configured, view) if view is not None else configured
    if asked is None:
        return most
    if asked > most:
        where = (
            f"{VIEW_CAP} allows {view:g}"
            if view is not None and view < configured
            else f"execution.{key} is {configured:g}"
        )
        problems.append(f"{key} {asked:g} ({where})")
    return min(asked, most)
