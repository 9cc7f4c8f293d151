"""Bump and compare Semantic Versioning 2.0.0 version strings."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, NamedTuple

# The official SemVer 2.0.0 grammar, ASCII digits only.
SEMVER = re.compile(
    r"^(?P<prefix>v?)"
    r"(?P<major>0|[1-9][0-9]*)\.(?P<minor>0|[1-9][0-9]*)\.(?P<patch>0|[1-9][0-9]*)"
    r"(?:-(?P<prerelease>(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+(?P<build>[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
IDENTIFIER = re.compile(r"^[0-9A-Za-z-]+$")
PARTS = ("major", "minor", "patch", "premajor", "preminor", "prepatch", "prerelease", "release")


class Version(NamedTuple):
    """A parsed version. ``prerelease`` is a tuple of identifiers, empty for a release."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()
    prefix: str = ""

    def __str__(self) -> str:
        text = f"{self.prefix}{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def parse_version(text: str) -> Version:
    """Parse ``text`` (an optional leading ``v`` is kept as a prefix).

    Raises:
        ValueError: if ``text`` is not a valid SemVer 2.0.0 version.
    """
    match = SEMVER.match(text.strip())
    if match is None:
        raise ValueError(f"not a semantic version: {text!r}")
    return Version(
        major=int(match["major"]),
        minor=int(match["minor"]),
        patch=int(match["patch"]),
        prerelease=tuple(match["prerelease"].split(".")) if match["prerelease"] else (),
        build=tuple(match["build"].split(".")) if match["build"] else (),
        prefix=match["prefix"],
    )


def _next_prerelease(current: tuple[str, ...], preid: str) -> tuple[str, ...]:
    """``rc.1`` -> ``rc.2``; a different or missing identifier starts at ``preid.1``."""
    if current and (not preid or current[0] == preid):
        if current[-1].isdigit():
            return (*current[:-1], str(int(current[-1]) + 1))
        return (*current, "1")
    return (preid, "1") if preid else ("1",)


def _bump_core(v: Version, part: str) -> tuple[int, int, int]:
    """Release numbers after a major, minor or patch bump, finalising a matching pre-release."""
    major, minor, patch, pre = v.major, v.minor, v.patch, v.prerelease
    if part == "major":
        return (major, 0, 0) if pre and minor == 0 and patch == 0 else (major + 1, 0, 0)
    if part == "minor":
        return (major, minor, 0) if pre and patch == 0 else (major, minor + 1, 0)
    return (major, minor, patch) if pre else (major, minor, patch + 1)


def _bumped(v: Version, part: str, preid: str) -> Version:
    """Apply ``part`` to ``v``; the result never carries build metadata."""
    if part in ("major", "minor", "patch"):
        return Version(*_bump_core(v, part), (), (), v.prefix)
    if part in ("premajor", "preminor", "prepatch"):
        core = _bump_core(v._replace(prerelease=()), part.removeprefix("pre"))
        return Version(*core, _next_prerelease((), preid), (), v.prefix)
    if part == "prerelease":
        patch = v.patch if v.prerelease else v.patch + 1
        return Version(v.major, v.minor, patch, _next_prerelease(v.prerelease, preid), (), v.prefix)
    return Version(v.major, v.minor, v.patch, (), (), v.prefix)


def semver_bump(version: str, part: str, prerelease_id: str = "rc") -> str:
    """Return ``version`` bumped by ``part``; build metadata is always dropped.

    ``part`` is one of:

    - ``major`` / ``minor`` / ``patch``: the usual bump, except that a pre-release of exactly
      that kind of release is finalised: ``2.0.0-rc.1`` + major = ``2.0.0``,
      ``1.3.0-rc.1`` + minor = ``1.3.0``, ``1.2.4-rc.1`` + patch = ``1.2.4``.
    - ``premajor`` / ``preminor`` / ``prepatch``: bump, then start ``-<prerelease_id>.1``.
    - ``prerelease``: ``1.2.4-rc.1`` -> ``1.2.4-rc.2``; on a release, bump patch first
      (``1.2.3`` -> ``1.2.4-rc.1``); a new identifier restarts (``-beta.3`` -> ``-rc.1``).
    - ``release``: drop the pre-release (``1.2.4-rc.2`` -> ``1.2.4``).

    Raises:
        ValueError: on an invalid version, part or pre-release identifier.
    """
    if part not in PARTS:
        raise ValueError(f"part must be one of: {', '.join(PARTS)}")
    if prerelease_id and (not IDENTIFIER.match(prerelease_id) or prerelease_id.isdigit()):
        raise ValueError("prerelease_id must be alphanumeric or hyphens, and not purely numeric")
    bumped = str(_bumped(parse_version(version), part, prerelease_id))
    if compare_versions(bumped, version) <= 0:
        raise ValueError(f"bumping {version} by {part!r} would not increase it (got {bumped})")
    return bumped


def _compare_identifiers(a: str, b: str) -> int:
    if a.isdigit() and b.isdigit():
        return (int(a) > int(b)) - (int(a) < int(b))
    if a.isdigit():
        return -1  # numeric identifiers sort before alphanumeric ones
    if b.isdigit():
        return 1
    return (a > b) - (a < b)


def compare_versions(a: str, b: str) -> int:
    """Return -1, 0 or 1 by SemVer precedence (build metadata ignored, prefix ignored)."""
    va, vb = parse_version(a), parse_version(b)
    core_a, core_b = (va.major, va.minor, va.patch), (vb.major, vb.minor, vb.patch)
    if core_a != core_b:
        return 1 if core_a > core_b else -1
    if va.prerelease == vb.prerelease:
        return 0
    if not va.prerelease:
        return 1  # a release ranks above its pre-releases
    if not vb.prerelease:
        return -1
    for x, y in zip(va.prerelease, vb.prerelease, strict=False):
        order = _compare_identifiers(x, y)
        if order:
            return order
    return (len(va.prerelease) > len(vb.prerelease)) - (len(va.prerelease) < len(vb.prerelease))


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``version`` and ``part`` (required), ``prerelease_id`` (optional, default "rc").
    Returns ``{"version": new_version, "previous": old_version}``.
    """
    return {"version": semver_bump(**input), "previous": input["version"]}


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError, KeyError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
