"""What a SOURCE on the command line means: its kind, where it is, the ref and the subfolder asked for.
The order below decides what wins when text could name two kinds; the spec itself (its default name,
which options it takes) comes from the kind's class in kinds/.

- git: `https://`, `ssh://`, `git://` and `file://` URLs, `user@host:path`, and a local repository
  (a folder with `.git`, or a bare one); GitHub's `owner/repo[/subdir][@ref]` is
  `https://github.com/owner/repo.git`. Never `ext::` or any other `transport::` (they run commands),
  and never plain `http://` (anyone on the way could change what arrives).
- archive: a local `.zip` or `.skill` file.
- folder: a local folder that is not a repository.
- file: a single SKILL.md.
- index: an Agent Skills discovery index on the web (`https://host/.well-known/agent-skills/index.json`,
  v0.2.0, or `.../.well-known/skills/index.json`, v0.1.0; the folder alone names its index.json).
- mcp: another MCP server that serves the Skills extension (`mcp+https://host/mcp`), read with
  `skills/list` and `resources/read`. Both are fetched by a client outside library/ (skillshelf.remote,
  given to `register_fetcher`), every file checked against the digest its listing gives before anything
  lands. Plain http is accepted for these two on a loopback host only (nothing is on the way there).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.kinds import kind_of
from skillshelf.library.sources.spec import (
    ARCHIVE_SUFFIXES,
    MCP_SCHEMES,
    SourceSpec,
    check_address,
    check_token_env,
    clean_subpath,
    is_scp_like,
    scheme_of,
    well_known,
)

_SHORTHAND = re.compile(
    r"^(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)/(?P<repo>[A-Za-z0-9._-]+)"
    r"(?P<sub>(?:/[^@/]+)*)(?:@(?P<ref>[^@\s]+))?$"
)


def parse_source(
    text: str,
    *,
    ref: str | None = None,
    path: str | None = None,
    base: Path | None = None,
    token_env: str | None = None,
) -> SourceSpec:
    """The source `text` names (`base`: where relative paths start, default the working folder)."""
    text = text.strip()
    if not text:
        raise SourceError("SOURCE is empty: give a git URL, owner/repo, a folder, a .zip/.skill file or a SKILL.md")
    spec = _parse(text, base or Path.cwd())
    kind = kind_of(spec.kind)
    if token_env is not None:
        if not kind.remote:
            raise SourceError(f"--token-env is for an MCP server or a discovery index; {text} is a {spec.kind}")
        spec = replace(spec, token_env=check_token_env(token_env))
    if ref is not None:
        if not kind.refs:
            raise SourceError(f"--ref is for git sources; {text} is a {spec.kind}")
        if spec.ref is not None and spec.ref != ref:
            raise SourceError(f"{text} names ref {spec.ref!r} and --ref says {ref!r}; give one of them")
        spec = replace(spec, ref=ref)
    if path:
        if spec.subpath:
            raise SourceError(f"{text} names the folder {spec.subpath!r} and --path says {path!r}; give one of them")
        if not kind.subfolders:
            raise SourceError(f"--path is for repositories, archives and folders; {text} is one SKILL.md")
        spec = replace(spec, subpath=clean_subpath(path))
    return spec


def require_signed(spec: SourceSpec, required: bool, signers: Path | None) -> SourceSpec:
    """`spec` that takes only commits signed by a key in `signers` (None: the library's allowed signers)."""
    if signers is not None and not required:
        raise SourceError("--allowed-signers goes with --require-signed-commit")
    if not required:
        return spec
    if not kind_of(spec.kind).signed_commits:
        raise SourceError(f"--require-signed-commit is for git sources; {spec.public_url} is a {spec.kind}")
    return replace(spec, signed=True, signers=str(signers.expanduser().absolute()) if signers else None)


def _parse(text: str, base: Path) -> SourceSpec:
    check_address(text)
    scheme = scheme_of(text)
    if scheme:
        return _from_url(text, scheme)
    if is_scp_like(text) and not (base / text).exists():
        return kind_of("git").spec(text)
    local = (base / Path(text).expanduser()) if not Path(text).expanduser().is_absolute() else Path(text).expanduser()
    if os.path.lexists(local):
        return _from_path(local.absolute())
    shorthand = _SHORTHAND.match(text)
    if shorthand:
        owner, repo = shorthand["owner"], shorthand["repo"].removesuffix(".git")
        sub = shorthand["sub"].strip("/")
        url = f"https://github.com/{owner}/{repo}.git"
        return kind_of("git").spec(url, ref=shorthand["ref"], subpath=clean_subpath(sub) if sub else "")
    raise SourceError(
        f"nothing at {text}, and it is not a git URL or GitHub owner/repo: give a git URL (https, ssh, git or "
        "file), owner/repo[/subdir][@ref], a folder, a .zip or .skill file, or a SKILL.md"
    )


def _from_url(text: str, scheme: str) -> SourceSpec:
    parts = urlsplit(text)
    if scheme in MCP_SCHEMES:
        return kind_of("mcp").spec(text)
    index = well_known(parts.path)
    if index is not None and scheme in ("https", "http"):
        return kind_of("index").spec(urlunsplit((parts.scheme, parts.netloc, index, parts.query, "")))
    if scheme == "file" and parts.path.lower().endswith(ARCHIVE_SUFFIXES):
        return _from_path(Path(parts.path))
    if scheme == "https" and parts.path.lower().endswith(ARCHIVE_SUFFIXES):
        raise SourceError(f"{text} is an archive on the web: download it, then add the file")
    return kind_of("git").spec(text)


def _from_path(path: Path) -> SourceSpec:
    if path.is_dir():
        if (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir()):
            return kind_of("git").spec(path.as_posix())
        return kind_of("folder").spec(path.as_posix())
    if path.name.lower().endswith(ARCHIVE_SUFFIXES):
        return kind_of("archive").spec(path.as_posix())
    if path.name.lower().endswith(".md") and path.is_file():
        return kind_of("file").spec(path.as_posix())
    raise SourceError(f"{path} is not a folder, a .zip or .skill archive, or a SKILL.md")
