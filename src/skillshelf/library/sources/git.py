"""git, run so that nothing from a repository runs and nothing waits for a person.

Every command goes through `children.run` with hooks off (`core.hooksPath=/dev/null`), only the https,
ssh, git and file protocols (`protocol.allow=never` first: `ext::` and other helpers that run commands
are refused by git itself), no submodules, no terminal prompt, ssh in batch mode, and a timeout.
The content is fetched shallow (one commit) into a bare repository of our own and taken out with
`git archive`, never checked out: no filter, no attribute from the repository (`export-subst`,
`export-ignore`) changes a byte of it. Sizes are listed (`ls-tree -l`) before anything is written.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from skillshelf.library import children
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.spec import strip_credentials

SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "protocol.allow=never",
    "protocol.https.allow=always",
    "protocol.ssh.allow=always",
    "protocol.git.allow=always",
    "protocol.file.allow=always",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "credential.interactive=false",
)
QUERY_TIMEOUT_S = 60.0
FETCH_TIMEOUT_S = 600.0
_FULL_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
# What git may keep from the user's environment: their configuration and how to reach a host, never
# where a repository is (GIT_DIR, GIT_WORK_TREE, ... would point git elsewhere).
_KEPT_GIT_VARIABLES = frozenset(
    {
        "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "GIT_PROXY_COMMAND",
        "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",
    }
)  # fmt: skip
_NETWORK_VARIABLES = (
    "SSH_AUTH_SOCK", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "XDG_CONFIG_HOME",
)  # fmt: skip


@dataclass(frozen=True)
class Resolved:
    commit: str
    ref: str  # the ref it was found as ('HEAD', 'refs/heads/main', 'refs/tags/v1', or the commit itself)


def git_environment() -> dict[str, str]:
    """The helper environment, plus the user's git configuration and what reaching a host needs (an ssh
    agent, proxies), without any GIT_* variable that would point git at another repository; no prompt
    ever waits for an answer. The command line's `-c` settings (SAFE_CONFIG) win over any configuration."""
    env = children.helper_environment()
    for name, value in os.environ.items():
        if name in _KEPT_GIT_VARIABLES or name in _NETWORK_VARIABLES:
            env[name] = value
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ASKPASS"] = "true"  # a credential helper that prompts gets an empty answer, at once
    env["SSH_ASKPASS"] = "true"
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    return env


def run_git(args: Sequence[str], *, url: str, timeout: float = QUERY_TIMEOUT_S, cwd: Path | None = None) -> str:
    """`git ARGS` (in `cwd`, a repository of our own); its output, or a SourceError that names `url`
    (without credentials) and git's own reason."""
    done = _run(args, url=url, timeout=timeout, cwd=cwd)
    if done.returncode != 0:
        shown = strip_credentials(url)
        if args[0] in ("ls-remote", "fetch"):  # talking to the server
            raise SourceError(
                f"git could not reach {shown}: {_reason(done.stderr, url)}. Check the address and that you can "
                f"read it (`git ls-remote {shown}` says the same); nothing was changed"
            )
        raise SourceError(f"git failed on what it fetched from {shown} ({args[0]}): {_reason(done.stderr, url)}")
    return done.stdout


def _run(
    args: Sequence[str], *, url: str, timeout: float = QUERY_TIMEOUT_S, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    command = ["git"]
    for item in SAFE_CONFIG:
        command += ["-c", item]
    if cwd is not None:
        command += ["-C", str(cwd)]
    command += list(args)
    try:
        return children.run(command, timeout=timeout, env=git_environment())
    except FileNotFoundError as exc:
        raise SourceError("git is not installed (or not on PATH); install it to add git sources") from exc
    except subprocess.TimeoutExpired as exc:
        raise SourceError(
            f"git did not finish within {timeout:.0f} s for {strip_credentials(url)}; check the address and the "
            "network, then run the command again"
        ) from exc
    except OSError as exc:
        raise SourceError(f"could not run git for {strip_credentials(url)}: {exc}") from exc


_GOOD_SIGNATURE = re.compile(r'^Good "git" signature for (\S+) with ', re.MULTILINE)


def verify_commit(repository: Path, commit: str, allowed_signers: Path, url: str) -> str:
    """Who signed `commit` (the principal `allowed_signers` gives its key), or a SourceError that says it
    is unsigned or signed by a key the file does not hold. SSH signatures only: what `git commit -S` makes
    with `gpg.format=ssh`."""
    config = ["-c", "gpg.format=ssh", "-c", f"gpg.ssh.allowedSignersFile={allowed_signers}"]
    done = _run([*config, "verify-commit", "--", commit], url=url, cwd=repository)
    found = _GOOD_SIGNATURE.search(done.stderr)
    if done.returncode == 0 and found is not None:
        return found.group(1)
    shown = strip_credentials(url)
    why = (
        "is not signed"
        if "no signature" in done.stderr.lower() or not done.stderr.strip()
        else (f"is not signed by a key in {allowed_signers} ({_reason(done.stderr, url)})")
    )
    raise SourceError(
        f"commit {commit} of {shown} {why}: refused, nothing was installed. Ask the source to sign its commits "
        f"(git commit -S with gpg.format=ssh), or add the key you trust to {allowed_signers}"
    )


def _reason(stderr: str, url: str) -> str:
    lines = [line.strip() for line in stderr.replace(url, strip_credentials(url)).splitlines() if line.strip()]
    useful = [line for line in lines if line.lower().startswith(("fatal", "error", "remote"))] or lines
    return " / ".join(useful[-2:]) or "no message"


def config_value(root: Path, key: str) -> str | None:
    """git's setting `key` as the repository holding `root` sees it (its own, the user's, the system's), or
    None: not set, not a repository, or git missing or stuck."""
    command = ["git", "-C", str(root), "config", "--get", key]
    try:
        done = children.run(command, timeout=QUERY_TIMEOUT_S, env=git_environment())
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def is_full_commit(text: str) -> bool:
    """Whether `text` names a commit in full (40 or 64 hex digits), as the lock pins one."""
    return bool(_FULL_SHA.fullmatch(text))


def resolve(url: str, ref: str | None) -> Resolved:
    """The commit `ref` names in the repository at `url` (None: its default branch)."""
    if ref is not None and is_full_commit(ref):
        return Resolved(ref, ref)
    listing = run_git(["ls-remote", "--", url], url=url)
    refs: dict[str, str] = {}
    for line in listing.splitlines():
        commit, _, name = line.partition("\t")
        refs[name] = commit
    wanted = ["HEAD"] if ref is None else [f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref]
    for name in wanted:
        if name in refs:
            return Resolved(refs[name], name.removesuffix("^{}"))
    if ref is None:
        raise SourceError(f"{strip_credentials(url)} has no default branch (HEAD); pass --ref BRANCH or TAG")
    known = sorted(n.rsplit("/", 1)[-1] for n in refs if n.startswith(("refs/heads/", "refs/tags/")))
    listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "") or "none"
    commit_hint = "; a commit is given in full (40 hex digits)" if re.fullmatch(r"[0-9a-f]{4,39}", ref) else ""
    raise SourceError(
        f"{strip_credentials(url)} has no branch or tag {ref!r} (it has: {listed}){commit_hint}; fix --ref"
    )


def fetch_commit(url: str, commit: str, repository: Path) -> None:
    """Fetch `commit` (one commit deep where the server allows it) into a new bare `repository`."""
    run_git(["init", "--quiet", "--bare", str(repository)], url=url)
    # Attributes from the repository must not change what `git archive` writes: this file wins over theirs.
    (repository / "info").mkdir(exist_ok=True)
    (repository / "info" / "attributes").write_text("* -export-subst -export-ignore\n", encoding="utf-8")
    fetch = ["fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head"]
    try:
        run_git([*fetch, "--depth", "1", "--", url, commit], url=url, timeout=FETCH_TIMEOUT_S, cwd=repository)
    except SourceError:  # a server that serves no commit by its id: all branches and tags, then look
        refspecs = ["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"]
        run_git([*fetch, "--", url, *refspecs], url=url, timeout=FETCH_TIMEOUT_S, cwd=repository)
    try:
        run_git(["cat-file", "-e", f"{commit}^{{commit}}"], url=url, cwd=repository)
    except SourceError as exc:
        raise SourceError(
            f"{strip_credentials(url)} has no commit {commit}: it was rewritten or removed. Run `skillshelf update` "
            "to take what the source holds now"
        ) from exc


@dataclass(frozen=True)
class TreeFile:
    path: str  # in the repository, '/'-separated
    mode: str  # git's: 100644, 100755, 120000 (a link), 160000 (a submodule)
    size: int


def list_tree(repository: Path, commit: str, subpath: str, url: str) -> list[TreeFile]:
    """Every file of `commit` under `subpath` with its size, before anything is written."""
    args = ["ls-tree", "-r", "-l", "-z", "--full-tree", commit]
    output = run_git([*args, "--", subpath] if subpath else args, url=url, cwd=repository)
    files = []
    for record in output.split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, _kind, _object, size = meta.split(None, 3)
        files.append(TreeFile(path, mode, int(size) if size.strip().isdigit() else 0))
    return files


def top_level_names(repository: Path, commit: str, url: str) -> list[str]:
    output = run_git(["ls-tree", "-z", "--name-only", commit], url=url, cwd=repository)
    return [name for name in output.split("\0") if name]


def archive(repository: Path, commit: str, paths: list[str], into: Path, url: str) -> Path:
    """`paths` of `commit` as a tar file (no compression, so its sizes are the files' own)."""
    tar = into / "tree.tar"
    run_git(
        ["archive", "--format=tar", f"--output={tar}", commit, "--", *paths],
        url=url,
        timeout=FETCH_TIMEOUT_S,
        cwd=repository,
    )
    return tar
