"""What a SOURCE on the command line means: its kind, where it is, the ref and the subfolder asked for.

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

A URL is kept for the lock without its credentials (`https://TOKEN@host/...` becomes
`https://host/...`); git's credential helpers supply them when it is fetched again. A local path is
kept relative to the library root when it is beside it (a team's repository), else from `~`.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from skillshelf.library.skill.discovery import IGNORED_NAMES, TOP_LEVEL_CATEGORY
from skillshelf.library.skill.folder import MAX_NAME_BYTES, kept
from skillshelf.library.sources.errors import SourceError

Kind = Literal["git", "archive", "folder", "file", "index", "mcp"]
REMOTE_KINDS = ("index", "mcp")  # fetched over the network by a client skillshelf.remote provides
GIT_SCHEMES = ("https", "ssh", "git", "file")
MCP_SCHEMES = ("mcp+https", "mcp+http")
WELL_KNOWN = ("/.well-known/agent-skills", "/.well-known/skills")
INDEX_FILE = "index.json"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
ARCHIVE_SUFFIXES = (".zip", ".skill")
_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!//)")
_SHORTHAND = re.compile(
    r"^(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)/(?P<repo>[A-Za-z0-9._-]+)"
    r"(?P<sub>(?:/[^@/]+)*)(?:@(?P<ref>[^@\s]+))?$"
)
NAME_RULE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# `patterns` would make the root read its categories there; `general` holds the root's own top-level skills.
RESERVED_NAMES = frozenset({"patterns", TOP_LEVEL_CATEGORY, *IGNORED_NAMES})
NAME_RULE_TEXT = (
    "must be 1-64 lowercase letters, digits, '.', '_' or '-' starting with a letter or digit, and not one of "
    + ", ".join(sorted(RESERVED_NAMES))
)


@dataclass(frozen=True)
class SourceSpec:
    kind: Kind
    url: str  # what is fetched: may hold credentials the user typed, never written anywhere
    ref: str | None = None
    subpath: str = ""
    default_name: str = ""  # the repository's, archive's or folder's own name
    token_env: str | None = None  # index, mcp: the environment variable holding the bearer token
    signed: bool = False  # git: the commit must carry an SSH signature by a key in the allowed signers
    signers: str | None = None  # its allowed-signers file on this machine (None: signing.allowed_signers')

    @property
    def public_url(self) -> str:
        return strip_credentials(self.url)


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
    if token_env is not None:
        if spec.kind not in REMOTE_KINDS:
            raise SourceError(f"--token-env is for an MCP server or a discovery index; {text} is a {spec.kind}")
        spec = replace(spec, token_env=check_token_env(token_env))
    if ref is not None:
        if spec.kind != "git":
            raise SourceError(f"--ref is for git sources; {text} is a {spec.kind}")
        if spec.ref is not None and spec.ref != ref:
            raise SourceError(f"{text} names ref {spec.ref!r} and --ref says {ref!r}; give one of them")
        spec = replace(spec, ref=ref)
    if path:
        if spec.subpath:
            raise SourceError(f"{text} names the folder {spec.subpath!r} and --path says {path!r}; give one of them")
        if spec.kind == "file":
            raise SourceError(f"--path is for repositories, archives and folders; {text} is one SKILL.md")
        spec = replace(spec, subpath=clean_subpath(path))
    return spec


def _parse(text: str, base: Path) -> SourceSpec:
    check_address(text)
    scheme = _scheme(text)
    if scheme:
        return _from_url(text, scheme)
    if _SCP_LIKE.match(text) and not (base / text).exists():
        return SourceSpec("git", text, default_name=_repo_name(text.split(":", 1)[1]))
    local = (base / Path(text).expanduser()) if not Path(text).expanduser().is_absolute() else Path(text).expanduser()
    if os.path.lexists(local):
        return _from_path(local.absolute())
    shorthand = _SHORTHAND.match(text)
    if shorthand:
        owner, repo = shorthand["owner"], shorthand["repo"].removesuffix(".git")
        sub = shorthand["sub"].strip("/")
        return SourceSpec(
            "git",
            f"https://github.com/{owner}/{repo}.git",
            ref=shorthand["ref"],
            subpath=clean_subpath(sub) if sub else "",
            default_name=repo,
        )
    raise SourceError(
        f"nothing at {text}, and it is not a git URL or GitHub owner/repo: give a git URL (https, ssh, git or "
        "file), owner/repo[/subdir][@ref], a folder, a .zip or .skill file, or a SKILL.md"
    )


def check_address(text: str) -> None:
    """The rules every address of a source follows, typed for `add` or read from the lock: not an option,
    not git's `transport::address` (it runs a command), and a URL over https, ssh, git or file only."""
    if text.startswith("-"):
        raise SourceError(f"SOURCE {text!r} starts with '-'; give a URL or a path")
    scheme = _scheme(text)
    if not scheme and "::" in text.split("/", 1)[0]:
        raise SourceError(
            f"{text!r} uses git's `transport::address` form, which runs a command to fetch; skillshelf fetches "
            "over https, ssh, git and file only"
        )
    if scheme in ("http", "mcp+http") and not _loopback_remote(text, scheme):
        raise SourceError(f"{text} is plain http, which anyone on the way can change; use https")
    if scheme and scheme not in (*GIT_SCHEMES, *MCP_SCHEMES, "http"):
        raise SourceError(f"{text}: skillshelf fetches over {', '.join(GIT_SCHEMES)} only, not {scheme}://")
    if scheme:
        try:
            urlsplit(text)
        except ValueError as exc:  # an unclosed '[' of an IPv6 host, ...
            raise SourceError(f"{scheme}://... is not a URL ({exc}); give the repository's address") from exc


def _scheme(text: str) -> str:
    return text.split("://", 1)[0].lower() if "://" in text else ""


def _loopback_remote(text: str, scheme: str) -> bool:
    """Plain http is accepted for an MCP server or a discovery index on this machine only."""
    try:
        parts = urlsplit(text)
        host = parts.hostname or ""
    except ValueError:
        return False
    return is_loopback_host(host) and (scheme == "mcp+http" or _well_known(parts.path) is not None)


def is_loopback_host(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1), with or without brackets."""
    bare = host.strip("[]").lower().rstrip(".")
    if bare == "localhost" or bare.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def _well_known(path: str) -> str | None:
    """The discovery index a URL path names (`.../.well-known/agent-skills[/index.json]`), or None."""
    folder = path.removesuffix("/" + INDEX_FILE).rstrip("/")
    return f"{folder}/{INDEX_FILE}" if folder.endswith(WELL_KNOWN) else None


def check_token_env(name: str) -> str:
    if not ENV_NAME.match(name):
        raise SourceError(f"--token-env {name!r} must name an environment variable (letters, digits, '_')")
    return name


def _from_url(text: str, scheme: str) -> SourceSpec:
    parts = urlsplit(text)
    if scheme in MCP_SCHEMES:
        return SourceSpec("mcp", text, default_name=_host_name(parts.hostname))
    index = _well_known(parts.path)
    if index is not None and scheme in ("https", "http"):
        url = urlunsplit((parts.scheme, parts.netloc, index, parts.query, ""))
        return SourceSpec("index", url, default_name=_host_name(parts.hostname))
    if scheme == "file" and parts.path.lower().endswith(ARCHIVE_SUFFIXES):
        return _from_path(Path(parts.path))
    if scheme == "https" and parts.path.lower().endswith(ARCHIVE_SUFFIXES):
        raise SourceError(f"{text} is an archive on the web: download it, then add the file")
    return SourceSpec("git", text, default_name=_repo_name(parts.path))


def _from_path(path: Path) -> SourceSpec:
    if path.is_dir():
        if (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir()):
            return SourceSpec("git", path.as_posix(), default_name=_repo_name(path.name))
        return SourceSpec("folder", path.as_posix(), default_name=path.name)
    if path.name.lower().endswith(ARCHIVE_SUFFIXES):
        return SourceSpec("archive", path.as_posix(), default_name=path.name.rsplit(".", 1)[0])
    if path.name.lower().endswith(".md") and path.is_file():
        return SourceSpec("file", path.as_posix(), default_name=path.parent.name or path.stem)
    raise SourceError(f"{path} is not a folder, a .zip or .skill archive, or a SKILL.md")


def default_name(kind: str, url: str) -> str:
    """The name a source of `kind` at `url` goes by, from its address alone (as `parse_source` gives it)."""
    if kind in REMOTE_KINDS:
        return _host_name(urlsplit(url.removeprefix("mcp+")).hostname)
    if kind == "git":
        repo = urlsplit(url).path if "://" in url else url.split(":", 1)[-1] if _SCP_LIKE.match(url) else url
        return _repo_name(repo)
    local = PurePosixPath(url.replace("\\", "/"))
    if kind == "archive":
        return local.name.rsplit(".", 1)[0]
    return local.parent.name if kind == "file" else local.name


def _host_name(host: str | None) -> str:
    return (host or "remote").removeprefix("www.")


def _repo_name(path: str) -> str:
    return PurePosixPath(path.rstrip("/")).name.removesuffix(".git") or "source"


def clean_subpath(text: str) -> str:
    """A folder inside the source, '/'-separated, that cannot lead out of it."""
    cleaned = PurePosixPath(text.replace("\\", "/").strip("/"))
    if text.startswith("/") or any(part in ("..", "") for part in cleaned.parts) or ":" in text or "\x00" in text:
        raise SourceError(f"--path {text!r} must be a folder inside the source, such as skills/")
    return "" if str(cleaned) == "." else str(cleaned)


def plain_relative(text: str) -> bool:
    """Whether `text` is a path inside a folder as skillshelf writes one: '/'-separated, relative, with no
    empty, '.' or '..' part and no NUL ('' is the folder itself)."""
    return text == "" or ("\x00" not in text and all(part not in ("", ".", "..") for part in text.split("/")))


def plain_name(name: str) -> bool:
    """Whether `name` may name a skill or a file in the library: one path component that a listing shows
    (no dot-name, no build folder, valid UTF-8), at most MAX_NAME_BYTES bytes."""
    return (
        bool(name)
        and "/" not in name
        and "\x00" not in name
        and kept(name)
        and len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES
    )


def is_source_name(name: str) -> bool:
    return bool(NAME_RULE.match(name)) and name not in RESERVED_NAMES


def source_name(proposed: str, *, given: bool) -> str:
    """The name a source installs under (`<root>/<name>/`): a given --name must follow the rule; a
    default one is made to."""
    if given:
        if not is_source_name(proposed):
            raise SourceError(f"--name {proposed!r} {NAME_RULE_TEXT}")
        return proposed
    name = re.sub(r"[^a-z0-9._-]+", "-", proposed.lower()).strip("._-")[:64] or "source"
    return name if name not in RESERVED_NAMES else f"{name}-skills"


def strip_credentials(url: str) -> str:
    """`url` without a password, without a user name but over ssh (a token is often put there:
    `https://x-access-token:TOKEN@github.com/...`), and without its query and fragment (`?private_token=`,
    `#access_token=`): a git URL needs none of them. What the lock keeps and every surface shows."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc and not parts.query and not parts.fragment:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username if parts.scheme == "ssh" and parts.username else None
    netloc = f"{user}@{host}" if user else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def require_signed(spec: SourceSpec, required: bool, signers: Path | None) -> SourceSpec:
    """`spec` that takes only commits signed by a key in `signers` (None: the library's allowed signers)."""
    if signers is not None and not required:
        raise SourceError("--allowed-signers goes with --require-signed-commit")
    if not required:
        return spec
    if spec.kind != "git":
        raise SourceError(f"--require-signed-commit is for git sources; {spec.public_url} is a {spec.kind}")
    return replace(spec, signed=True, signers=str(signers.expanduser().absolute()) if signers else None)


def portable_path(path: Path, root: Path) -> str:
    """A local source's path as the lock keeps it: relative to the root when it sits beside it (the same
    in every clone of a team's repository), else from `~` when under the home folder."""
    absolute = path.absolute()
    for anchor in (root.absolute().parent, root.absolute()):
        if absolute.is_relative_to(anchor):
            return Path(os.path.relpath(absolute, root.absolute())).as_posix()
    home = Path.home()
    if absolute.is_relative_to(home):
        return "~/" + absolute.relative_to(home).as_posix()
    return absolute.as_posix()


def resolve_local(url: str, root: Path) -> Path:
    """Where a locked local path is on this machine (see portable_path)."""
    if url.startswith("~"):
        return Path(url).expanduser()
    path = Path(url)
    return path if path.is_absolute() else Path(os.path.normpath(root.absolute() / path))


def is_local_git(url: str) -> bool:
    return "://" not in url and not _SCP_LIKE.match(url)
