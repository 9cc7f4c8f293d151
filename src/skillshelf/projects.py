"""Project resolution for the per-project modules (artifacts, memory).

A tool may touch a project only inside a configured project root. A project is named either by
its folder name under a root (`my-app`) or by a path (`~/Dev/my-app`, `/home/me/Dev/my-app`);
either way the resolved real path must lie inside a root, so `..`, absolute paths elsewhere and
symlinks that escape are refused with ACCESS_DENIED before anything is read or written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.skill.paths import display_path

DEFAULT_PROJECTS_ROOT = Path("~/Dev")
MAX_NAME_BYTES = 255  # NAME_MAX on Linux and macOS: a longer path component cannot exist
MAX_PATH_CHARS = 1024


class AccessDeniedError(SkillshelfError):
    def __init__(self, project: str, roots: list[Path]) -> None:
        allowed = ", ".join(display_path(r) for r in roots) or "none configured"
        super().__init__(
            ErrorCode.ACCESS_DENIED,
            f"Project {project!r} is outside the configured project roots ({allowed}). Name a project inside "
            "them, or start skillshelf with --projects-root PATH.",
        )


class ProjectNotFoundError(SkillshelfError):
    def __init__(self, project: str, known: list[str], roots: list[Path] | None = None) -> None:
        searched = ", ".join(display_path(r) for r in roots or []) or "none configured"
        hint = f" Known projects: {', '.join(known[:20])}." if known else " No projects there yet."
        super().__init__(
            ErrorCode.PROJECT_NOT_FOUND,
            f"No project {project!r} under the project roots searched ({searched}).{hint} Projects elsewhere: "
            "start skillshelf with --projects-root PATH (or set SKILLSHELF_PROJECTS).",
            suggestions=known[:20],
        )


@dataclass(frozen=True)
class Project:
    name: str
    path: Path  # resolved, inside `root`
    root: Path


@dataclass(frozen=True)
class ProjectRoots:
    roots: tuple[Path, ...]

    @classmethod
    def of(cls, roots: list[Path]) -> ProjectRoots:
        return cls(tuple(r.expanduser().resolve() for r in roots))

    def resolve(self, project: str, *, must_exist: bool = True) -> Project:
        """The project named `project`, or AccessDeniedError / ProjectNotFoundError."""
        if not project or "\x00" in project:
            raise SkillshelfError(ErrorCode.VALIDATION_ERROR, "project must be a non-empty name or path")
        too_long = [part for part in Path(project).parts if len(part.encode("utf-8", "replace")) > MAX_NAME_BYTES]
        if too_long or len(project) > MAX_PATH_CHARS:
            shown = project if len(project) <= 60 else project[:60] + "..."
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"project {shown!r} is not a usable path: each folder name must be at most {MAX_NAME_BYTES} "
                f"bytes and the whole path at most {MAX_PATH_CHARS} characters. Pass the project's folder name.",
            )
        candidates = self._candidates(project)
        for candidate in candidates:
            real = Path(os.path.realpath(candidate))
            root = self.root_of(real)
            if root is None or real == root:
                continue
            if must_exist and not real.is_dir():
                continue
            return Project(name=real.relative_to(root).as_posix(), path=real, root=root)
        if any(self.root_of(Path(os.path.realpath(c))) is None for c in candidates):
            raise AccessDeniedError(project, list(self.roots))
        raise ProjectNotFoundError(project, self.names(), list(self.roots))

    def _candidates(self, project: str) -> list[Path]:
        """An absolute or '~' path as given; anything else relative to each root in turn."""
        given = Path(project).expanduser()
        if given.is_absolute():
            return [given]
        return [root / project for root in self.roots]

    def root_of(self, real: Path) -> Path | None:
        for root in self.roots:
            if real == root or real.is_relative_to(root):
                return root
        return None

    def names(self) -> list[str]:
        found: list[str] = []
        for root in self.roots:
            try:
                found.extend(sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith(".")))
            except OSError:
                continue
        return found

    def projects(self) -> list[Project]:
        return [self.resolve(name) for name in dict.fromkeys(self.names())]
