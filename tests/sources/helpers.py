"""Real git repositories, skills and archives made in tmp for the source tests (no network)."""

from __future__ import annotations

import os
import stat
import subprocess
import zipfile
from pathlib import Path

from skillshelf.library.sources.install import Outcome, open_shelf
from skillshelf.library.sources.parse import parse_source

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def skill_md(name: str, description: str, body: str = "", **extra: str) -> str:
    fields = "".join(f"{key}: {value}\n" for key, value in extra.items())
    text = body or f"# {name}\n\n## Steps\n\n1. Read the input.\n2. Do the work.\n"
    return f"---\nname: {name}\ndescription: {description}\n{fields}---\n{text}"


class Repo:
    """A git repository with a working tree, made and changed by the test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "--quiet", "--initial-branch=main")

    def git(self, *args: str) -> str:
        env = {**os.environ, **GIT_IDENTITY}
        done = subprocess.run(
            ["git", "-c", "protocol.file.allow=always", *args],
            cwd=self.path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout.strip()

    @property
    def url(self) -> str:
        return self.path.as_uri()

    def write(self, relative: str, text: str, *, executable: bool = False) -> Path:
        path = self.path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755 if executable else 0o644)
        return path

    def skill(self, relative: str, description: str, **extra: str) -> Path:
        name = relative.rstrip("/").rsplit("/", 1)[-1]
        return self.write(f"{relative}/SKILL.md", skill_md(name, description, **extra))

    def remove(self, relative: str) -> None:
        self.git("rm", "-r", "--quiet", relative)

    def commit(self, message: str = "change") -> str:
        self.git("add", "--all")
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


def add(root: Path, source: str, **options: object) -> Outcome:
    spec = parse_source(
        source,
        ref=options.pop("ref", None),  # type: ignore[arg-type]
        path=options.pop("path", None),  # type: ignore[arg-type]
    )
    with open_shelf(root) as shelf:
        return shelf.add(spec, **options)  # type: ignore[arg-type]


def tree_of(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every entry under `root` but `.skillshelf/` (local state): kind, mode, bytes or link text."""
    found: dict[str, tuple[str, int, bytes]] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative == ".skillshelf" or relative.startswith(".skillshelf/"):
            continue
        info = path.lstat()
        mode = stat.S_IMODE(info.st_mode)
        if path.is_symlink():
            found[relative] = ("link", 0, os.fsencode(str(path.readlink())))
        elif path.is_dir():
            found[relative] = ("dir", mode, b"")
        else:
            found[relative] = ("file", mode, path.read_bytes())
    return found


def staging_left(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".skillshelf-staging-"))


def make_zip(path: Path, entries: dict[str, bytes | str], *, modes: dict[str, int] | None = None) -> Path:
    """A real zip: each entry a file (or, with a mode in `modes`, a link, a FIFO, a device...)."""
    modes = modes or {}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = modes.get(name, stat.S_IFREG | 0o644) << 16
            archive.writestr(info, content.encode("utf-8") if isinstance(content, str) else content)
    return path
