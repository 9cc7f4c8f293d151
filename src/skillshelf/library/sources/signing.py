"""A reviewed `skillshelf.lock`, signed with the SSH keys people already have, and checked against a list
of the keys a team trusts: `ssh-keygen -Y sign` / `-Y verify`, as git signs commits with SSH.

`skillshelf sign` signs the lock's bytes in the namespace `skillshelf-lock` (a signature made for a git
commit or anything else does not verify as a lock's) and writes `skillshelf.lock.sig` beside it.
`verify --signed` and the `require_signed` serve setting check that signature against an allowed-signers
file (`--allowed-signers`, else the library's `.skillshelf/allowed_signers`, else git's
`gpg.ssh.allowedSignersFile`): an unsigned lock, a lock changed after it was signed, and a key not in the
file are each refused, and say so. The bytes checked are the bytes then read as the lock (never read twice).

A signature is the trust anchor the digests are not: the lock's digests pin every byte of every skill,
and the signature says who reviewed that lock. It is as good as the allowed-signers file: keep it where
only the people who decide whom to trust can change it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from skillshelf.library import children
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import (
    LOCK_NAME,
    Lock,
    lock_bytes,
    lock_path,
    lock_text,
    parse_lock,
    read_lock_bytes,
    write_atomically,
)
from skillshelf.library.sources.signers import allowed_signers

NAMESPACE = "skillshelf-lock"
SIGNATURE_NAME = f"{LOCK_NAME}.sig"
TIMEOUT_S = 60.0
MAX_SIGNATURE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Signed:
    lock: Lock  # parsed from the very bytes the signature covers
    signers: tuple[str, ...]  # the principals of the allowed-signers file the key belongs to
    allowed: Path


def signature_path(root: Path) -> Path:
    return root / SIGNATURE_NAME


def sign(root: Path, key: Path) -> Path:
    """Sign the lock of `root` with the SSH key `key` (a private key, or a public one ssh-agent holds);
    the signature file written."""
    data = _lock_bytes(root)
    if not key.expanduser().is_file():
        raise SourceError(f"no SSH key at {key}; pass --key with your private key (or its .pub, held by ssh-agent)")
    with tempfile.TemporaryDirectory(prefix="skillshelf-sign-") as scratch:
        copy = Path(scratch) / LOCK_NAME
        copy.write_bytes(data)
        done = _ssh_keygen(["-Y", "sign", "-f", str(key.expanduser()), "-n", NAMESPACE, str(copy)])
        if done.returncode != 0:
            raise SourceError(f"ssh-keygen could not sign with {key}: {_reason(done)}; nothing was written")
        signature = (Path(scratch) / SIGNATURE_NAME).read_text(encoding="ascii")
    target = signature_path(root)
    write_atomically(target, signature)
    return target


def verify_signed(root: Path, allowed: Path | None = None) -> Signed:
    """The lock of `root`, when its signature verifies against the allowed signers; else a SourceError
    that says which of unsigned, changed since signed, or signed by an unknown key it is."""
    data = _lock_bytes(root)
    signature = signature_path(root)
    if not signature.is_file():
        raise SourceError(
            f"{LOCK_NAME} in {root} is not signed (no {SIGNATURE_NAME}); a reviewer signs it with `skillshelf sign`"
        )
    if signature.stat().st_size > MAX_SIGNATURE_BYTES:
        raise SourceError(f"{signature} is not an SSH signature (over {MAX_SIGNATURE_BYTES} bytes)")
    signers_file = allowed_signers(root, allowed)
    signers = _principals(signature, signers_file)
    with tempfile.TemporaryFile() as message:
        message.write(data)
        message.flush()
        for principal in signers:
            message.seek(0)
            command = ["-Y", "verify", "-f", str(signers_file), "-I", principal, "-n", NAMESPACE, "-s", str(signature)]
            if _ssh_keygen(command, stdin=message).returncode == 0:
                where = str(lock_path(root))
                return Signed(parse_lock(lock_text(data, where), where), tuple(signers), signers_file)
    raise SourceError(
        f"the signature {SIGNATURE_NAME} does not match {LOCK_NAME} in {root}: the lock changed after it was signed "
        "(or the signature is for something else). Review the lock's changes (`git diff`), then sign it again"
    )


def _principals(signature: Path, signers_file: Path) -> list[str]:
    done = _ssh_keygen(["-Y", "find-principals", "-s", str(signature), "-f", str(signers_file)])
    found = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not found:
        raise SourceError(
            f"{SIGNATURE_NAME} is signed by a key that is not in {signers_file} (or is not an SSH signature): "
            "refused. Add the reviewer's public key there if you trust it"
        )
    return found


def _lock_bytes(root: Path) -> bytes:
    """What a signature covers: the lock's bytes with CRLF as LF (lock.py `lock_bytes`), so a signed lock
    still verifies after a checkout that changed its line endings, and only then."""
    try:
        return lock_bytes(read_lock_bytes(lock_path(root)))
    except FileNotFoundError:
        raise SourceError(f"no {LOCK_NAME} in {root}: nothing to sign or verify") from None


def _ssh_keygen(args: list[str], stdin: IO[bytes] | None = None) -> subprocess.CompletedProcess[str]:
    env = children.helper_environment()
    if "SSH_AUTH_SOCK" in os.environ:  # a key held by ssh-agent signs through it
        env["SSH_AUTH_SOCK"] = os.environ["SSH_AUTH_SOCK"]
    try:
        return children.run(["ssh-keygen", *args], timeout=TIMEOUT_S, env=env, stdin=stdin)
    except FileNotFoundError:
        raise SourceError("ssh-keygen is not installed (the OpenSSH client); install it to sign or verify") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"ssh-keygen did not finish within {TIMEOUT_S:.0f} s (waiting for a passphrase?)") from None


def _reason(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return " / ".join(lines[-2:]) or f"exit status {done.returncode}"
