"""A skill's run policy: what one run of it needs, declared in its frontmatter under `policy:`.

    policy:
      network: none            # none (the default) or any
      read_paths: [/srv/data]  # absolute paths the run may read (bound read-only in the sandbox)
      env: [GITHUB_TOKEN]      # variables it receives from the server's environment, by name only
      timeout_s: 60            # at most this long (within the configured maximum)
      memory_mb: 512           # each process's memory (within the configured maximum)

This module only reads the declaration (the one parser: the checker, executeSkill and an update's
review all call `policy_of`); what a run is granted, and the refusal when a policy asks for more than
the configuration and the view allow, is execution/policy.py. A skill with no `policy` key declares
nothing: it runs with what the configuration gives every skill.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any, Literal

from skillshelf.library.children import RUN_VARIABLES, SERVER_PREFIX

Network = Literal["none", "any"]
KEYS = ("network", "read_paths", "env", "timeout_s", "memory_mb")
NETWORKS: tuple[Network, ...] = ("none", "any")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# Set by skillshelf for every run (children.skill_environment), or the server's own configuration (a
# database URL, tokens): a policy cannot ask for them.
RESERVED_ENV = RUN_VARIABLES
MAX_ENTRIES = 32
MAX_PATH_CHARS = 1024
MAX_TIMEOUT_S = 3600
MIN_MEMORY_MB = 32


class PolicyError(ValueError):
    """A `policy` that cannot be read; the message names the key and what to write instead."""


@dataclass(frozen=True)
class SkillPolicy:
    """What a skill declares; `declared` False: no `policy` key (the configuration's defaults apply)."""

    declared: bool = False
    network: Network = "none"
    read_paths: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    timeout_s: float | None = None  # None: the configured maximum
    memory_mb: int | None = None

    def widens(self, before: SkillPolicy) -> list[str]:
        """What this policy asks for that `before` did not (for an update's review), one phrase each."""
        if before.declared and not self.declared:
            return ["its policy is gone: it runs with what the configuration gives every skill"]
        out = []
        if self.network != before.network and self.network == "any":
            out.append(f"network {before.network} -> {self.network}")
        out += [f"reads {path}" for path in self.read_paths if path not in before.read_paths]
        out += [f"receives ${name}" for name in self.env if name not in before.env]
        for key, new, old in (
            ("timeout_s", self.timeout_s, before.timeout_s),
            ("memory_mb", self.memory_mb, before.memory_mb),
        ):
            if old is not None and (new is None or new > old):
                out.append(f"{key} {old:g} -> {'the configured maximum' if new is None else f'{new:g}'}")
        return out


def policy_of(frontmatter: dict[str, Any]) -> SkillPolicy:
    """The policy a skill's frontmatter declares; PolicyError (naming the key) when it is not valid."""
    if "policy" not in frontmatter:
        return SkillPolicy()
    raw = frontmatter["policy"]
    if raw is None:
        return SkillPolicy(declared=True)
    if not isinstance(raw, dict):
        raise PolicyError(f"policy must be a mapping of {', '.join(KEYS)}, not a {type(raw).__name__}")
    unknown = [str(key) for key in raw if key not in KEYS]
    if unknown:
        raise PolicyError(f"policy has unknown key(s) {', '.join(map(repr, unknown))}; the keys are {', '.join(KEYS)}")
    return SkillPolicy(
        declared=True,
        network=_network(raw.get("network", "none")),
        read_paths=tuple(_path(p) for p in _names_list(raw, "read_paths")),
        env=tuple(_env_name(n) for n in _names_list(raw, "env")),
        timeout_s=_number(raw, "timeout_s", 0, MAX_TIMEOUT_S),
        memory_mb=_whole(raw, "memory_mb", MIN_MEMORY_MB),
    )


def _network(value: Any) -> Network:
    for known in NETWORKS:
        if value == known:
            return known
    raise PolicyError(f"policy.network is {value!r}; write none (no network, the default) or any (the host's network)")


def _names_list(raw: dict[str, Any], key: str) -> list[str]:
    value = raw.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PolicyError(f"policy.{key} must be a list of strings, e.g. {key}: [{_EXAMPLE[key]}]")
    if len(value) > MAX_ENTRIES:
        raise PolicyError(f"policy.{key} lists {len(value)} entries; at most {MAX_ENTRIES}")
    return list(dict.fromkeys(value))


_EXAMPLE = {"read_paths": "/srv/data", "env": "GITHUB_TOKEN"}


def _path(path: str) -> str:
    shown = path[:80]
    if "\0" in path or len(path) > MAX_PATH_CHARS:
        raise PolicyError(
            f"policy.read_paths: {shown!r} is not a path (a NUL byte, or over {MAX_PATH_CHARS} characters)"
        )
    if not path.startswith("/"):
        raise PolicyError(f"policy.read_paths: {shown!r} is not absolute; write the full path, e.g. /srv/data")
    if ".." in path.split("/"):
        raise PolicyError(f"policy.read_paths: {shown!r} has a '..' component; write the path it means")
    normal = posixpath.normpath(path)
    if normal == "/":
        raise PolicyError("policy.read_paths: '/' is the whole file system; name the folders the skill reads")
    return normal


def _env_name(name: str) -> str:
    if not ENV_NAME.match(name):
        raise PolicyError(f"policy.env: {name[:80]!r} is not a variable name (letters, digits and '_')")
    if name in RESERVED_ENV or name.startswith(SERVER_PREFIX):
        raise PolicyError(
            f"policy.env: {name} is set by skillshelf or configures the server; a skill cannot receive it"
        )
    return name


def _number(raw: dict[str, Any], key: str, above: float, at_most: float) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not above < value <= at_most:
        raise PolicyError(
            f"policy.{key} is {value!r}; write a number of seconds above {above:g} and at most {at_most:g}"
        )
    return float(value)


def _whole(raw: dict[str, Any], key: str, at_least: int) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < at_least:
        raise PolicyError(f"policy.{key} is {value!r}; write a whole number of megabytes, at least {at_least}")
    return value
