"""A source as skillshelf holds it (`SourceSpec`: its kind, where it is, the ref and the subfolder asked
for) and the rules every address and name follows, typed for `add` or read from the lock.

What each kind is (how it is parsed, fetched, locked) is its class in kinds/; what a SOURCE on the command
line means is parse.py.

A URL is kept for the lock without its credentials (`https://TOKEN@host/...` becomes
`https://host/...`); git's credential helpers supply them when it is fetched again. A local path is
kept relative to the library root when it is beside it (a team's repository), else from `~`.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from skillshelf.library.skill.discovery import IGNORED_NAMES, TOP_LEVEL_CATEGORY
from skillshelf.library.skill.folder import MAX_NAME_BYTES, kept
from skillshelf.library.sources.errors import SourceError

Kind = Literal[
    "git", "archive", "folder", "file", "index", "mcp"
]  # kinds.KINDS, one class each (a test keeps them equal)
STATE_DIR = ".skillshelf"  # the library's own folder (state.py): a dot-name, never a source's
GIT_SCHEMES = ("https", "ssh", "git", "file")
MCP_SCHEMES = ("mcp+https", "mcp+http")
WELL_KNOWN = ("/.well-known/agent-skills", "/.well-known/skills")
INDEX_FILE = "index.json"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
ARCHIVE_SUFFIXES = (".zip", ".skill")
_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!//)")
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
    signers: str | None = None  # its allowed-signers file on this machine (None: signers.allowed_signers')

    @property
    def public_url(self) -> str:
        return strip_credentials(self.url)


def check_address(text: str) -> None:
    """The rules every address of a source follows, typed for `add` or read from the lock: not an option,
    not git's `transport::address` (it runs a command), and a URL over https, ssh, git or file only."""
    if text.startswith("-"):
        raise SourceError(f"SOURCE {text!r} starts with '-'; give a URL or a path")
    scheme = scheme_of(text)
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


def scheme_of(text: str) -> str:
    return text.split("://", 1)[0].lower() if "://" in text else ""


def _loopback_remote(text: str, scheme: str) -> bool:
    """Plain http is accepted for an MCP server or a discovery index on this machine only."""
    try:
        parts = urlsplit(text)
        host = parts.hostname or ""
    except ValueError:
        return False
    return is_loopback_host(host) and (scheme == "mcp+http" or well_known(parts.path) is not None)


@functools.lru_cache(maxsize=1024)  # the HTTP server asks it of every request's Host and peer (an ipaddress parse)
def is_loopback_host(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1), with or without brackets."""
    bare = host.strip("[]").lower().rstrip(".")
    if bare == "localhost" or bare.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def well_known(path: str) -> str | None:
    """The discovery index a URL path names (`.../.well-known/agent-skills[/index.json]`), or None."""
    folder = path.removesuffix("/" + INDEX_FILE).rstrip("/")
    return f"{folder}/{INDEX_FILE}" if folder.endswith(WELL_KNOWN) else None


def check_token_env(name: str) -> str:
    if not ENV_NAME.match(name):
        raise SourceError(f"--token-env {name!r} must name an environment variable (letters, digits, '_')")
    return name


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
    (no dot-name, no build folder, valid UTF-8, no control character: folder.kept), at most MAX_NAME_BYTES
    bytes."""
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


def is_scp_like(text: str) -> bool:
    """git's `user@host:path` form."""
    return bool(_SCP_LIKE.match(text))


def is_local_git(url: str) -> bool:
    return "://" not in url and not is_scp_like(url)
