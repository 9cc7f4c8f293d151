"""A git source whose commits must be signed (issue 31): `add --require-signed-commit` takes a commit signed
by a key in the allowed-signers file and records that in the lock; an unsigned commit, one signed by another
key and a missing allowed-signers file are refused with nothing installed; `update` to an unsigned commit is
refused and the old version kept. Keys are made in tmp_path; the sources are real git repositories."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import LOCK_NAME, parse_lock, read_lock
from skillshelf.library.sources.parse import parse_source, require_signed
from tests.sources.helpers import Repo


def _ssh_signing() -> bool:
    if shutil.which("ssh-keygen") is None or shutil.which("git") is None:
        return False
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False, timeout=60)
    major, minor = (int(part) for part in done.stdout.split()[2].split(".")[:2])
    return (major, minor) >= (2, 34)  # git verifies SSH signatures with an allowed-signers file from 2.34


pytestmark = pytest.mark.skipif(not _ssh_signing(), reason="needs ssh-keygen and git 2.34+ (SSH commit signing)")


def make_key(folder: Path, name: str, email: str) -> tuple[Path, str]:
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", email, "-f", str(key)], check=True, timeout=60)
    public = (folder / f"{name}.pub").read_text(encoding="utf-8").split()
    return key, f"{email} {public[0]} {public[1]}\n"


def signed_commit(repo: Repo, key: Path, message: str) -> str:
    repo.git("add", "--all")
    repo.git("-c", "gpg.format=ssh", "-c", f"user.signingkey={key}", "commit", "--quiet", "-S", "-m", message)
    return repo.git("rev-parse", "HEAD")


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Path]:
    ana, ana_line = make_key(tmp_path / "keys", "ana", "ana@example.org")
    eve, _ = make_key(tmp_path / "keys", "eve", "eve@example.org")
    allowed = tmp_path / "keys" / "allowed_signers"
    allowed.write_text(ana_line, encoding="utf-8")
    return {"ana": ana, "eve": eve, "allowed": allowed}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo(tmp_path / "upstream")
    made.skill("release-notes", "Draft release notes from merged pull requests.")
    return made


def add_signed(root: Path, repo: Repo, allowed: Path | None) -> None:
    spec = require_signed(parse_source(repo.url), True, allowed)
    with open_shelf(root) as shelf:
        shelf.add(spec, name="team", reviewer="ana@example.org")


def test_a_commit_signed_by_an_allowed_key_is_installed_and_the_lock_says_so(
    tmp_path: Path, repo: Repo, keys: dict[str, Path]
) -> None:
    signed_commit(repo, keys["ana"], "first")
    root = tmp_path / "library"
    root.mkdir()
    add_signed(root, repo, keys["allowed"])
    entry = read_lock(root / LOCK_NAME).sources["team"]
    assert (entry.signed, entry.signer) == ("ssh", "ana@example.org")
    assert entry.signers is not None and Path(entry.signers).name == "allowed_signers"
    assert (root / "team" / "release-notes" / "SKILL.md").is_file()


@pytest.mark.parametrize("who", ["nobody", "eve"])
def test_an_unsigned_commit_or_an_unknown_key_is_refused_and_nothing_lands(
    tmp_path: Path, repo: Repo, keys: dict[str, Path], who: str
) -> None:
    commit = repo.commit("first") if who == "nobody" else signed_commit(repo, keys["eve"], "first")
    root = tmp_path / "library"
    root.mkdir()
    with pytest.raises(SourceError, match=f"commit {commit} .*refused, nothing was installed"):
        add_signed(root, repo, keys["allowed"])
    assert not (root / "team").exists() and not (root / LOCK_NAME).exists()


def test_no_allowed_signers_file_is_refused(tmp_path: Path, repo: Repo, keys: dict[str, Path]) -> None:
    signed_commit(repo, keys["ana"], "first")
    root = tmp_path / "library"
    root.mkdir()
    with pytest.raises(SourceError, match="no allowed-signers file"):
        add_signed(root, repo, tmp_path / "missing")
    assert not (root / "team").exists()


def test_update_to_an_unsigned_commit_is_refused_and_the_old_version_kept(
    tmp_path: Path, repo: Repo, keys: dict[str, Path]
) -> None:
    first = signed_commit(repo, keys["ana"], "first")
    root = tmp_path / "library"
    root.mkdir()
    add_signed(root, repo, keys["allowed"])
    before = (root / LOCK_NAME).read_bytes()
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    second = repo.commit("unsigned")
    with open_shelf(root) as shelf, pytest.raises(SourceError, match=f"commit {second} .*is not signed"):
        shelf.prepare_update("team")
    assert (root / LOCK_NAME).read_bytes() == before
    assert read_lock(root / LOCK_NAME).sources["team"].commit == first
    assert not (root / "team" / "pdf-fill").exists()


def test_the_cli_takes_the_flags_and_a_non_git_source_is_refused(
    tmp_path: Path, repo: Repo, keys: dict[str, Path]
) -> None:
    signed_commit(repo, keys["ana"], "first")
    root = tmp_path / "library"
    flags = ["--require-signed-commit", "--allowed-signers", str(keys["allowed"]), "--library", str(root)]
    result = CliRunner().invoke(cli, ["add", repo.url, "--name", "team", *flags])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "folder"
    folder.mkdir()
    result = CliRunner().invoke(cli, ["add", str(folder), *flags])
    assert result.exit_code != 0 and "--require-signed-commit is for git sources" in result.stderr


def test_a_lock_with_a_bad_signed_field_is_refused() -> None:
    text = '[source.team]\nkind = "folder"\nurl = "x"\ninstalled = "2026-01-01T00:00:00Z"\nsigned = "ssh"\n'
    with pytest.raises(SourceError, match="only a git source has signed commits"):
        parse_lock(text)
    with pytest.raises(SourceError, match='go with signed = "ssh"'):
        parse_lock(text.replace('kind = "folder"', 'kind = "git"').replace('signed = "ssh"', 'signer = "a"'))


def test_update_require_signed_commit_verifies_and_records_the_requirement(
    tmp_path: Path, repo: Repo, keys: dict[str, Path]
) -> None:
    signed_commit(repo, keys["ana"], "first")
    root = tmp_path / "library"
    assert CliRunner().invoke(cli, ["add", repo.url, "--name", "team", "--library", str(root)]).exit_code == 0
    assert read_lock(root / LOCK_NAME).sources["team"].signed is None
    flags = [
        "--require-signed-commit",
        "--allowed-signers",
        str(keys["allowed"]),
        "--library",
        str(root),
        "--yes",
        "--no-findability",
    ]
    result = CliRunner().invoke(cli, ["update", "team", *flags])
    assert result.exit_code == 0, result.output
    entry = read_lock(root / LOCK_NAME).sources["team"]
    assert (entry.signed, entry.signer) == ("ssh", "ana@example.org")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    signed_commit(repo, keys["eve"], "eve's")  # the requirement holds for later updates, without the flag
    result = CliRunner().invoke(cli, ["update", "team", "--library", str(root), "--yes", "--no-findability"])
    assert result.exit_code != 0 and "is not signed by a key in" in result.stderr


def test_sync_checks_the_locked_commit(tmp_path: Path, repo: Repo, keys: dict[str, Path]) -> None:
    signed_commit(repo, keys["ana"], "first")
    root = tmp_path / "library"
    root.mkdir()
    add_signed(root, repo, keys["allowed"])
    keys["allowed"].write_text("", encoding="utf-8")  # nobody is trusted any more
    shutil.rmtree(root / "team" / "release-notes")
    with open_shelf(root) as shelf:
        outcomes = shelf.sync()
    assert [o.action for o in outcomes] == ["failed"]
    assert "is not signed by a key in" in "; ".join(outcomes[0].warnings)
    assert not (root / "team" / "release-notes").exists()
