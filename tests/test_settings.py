"""Settings precedence: flags, then environment, then the config file, then defaults."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillshelf.errors import SkillshelfError
from skillshelf.settings import resolve_settings
from tests.conftest import write


def test_the_config_file_fills_what_flags_and_environment_leave_open(tmp_path: Path) -> None:
    config = write(
        tmp_path / "config.toml",
        f"""
        library = ["{tmp_path / "lib"}"]
        projects = ["{tmp_path / "dev"}"]

        [execution]
        enabled = true
        allow = ["python/*"]
        timeout_s = 5
        """,
    )
    settings = resolve_settings(config_path=config, env={})
    assert settings.roots == [tmp_path / "lib"] and settings.project_roots == [tmp_path / "dev"]
    assert settings.execution.enabled and settings.execution.allow == ["python/*"]
    assert settings.execution.timeout_s == 5 and settings.execution.memory_mb == 1024  # default kept
    from_env = resolve_settings(
        config_path=config, env={"SKILLSHELF_LIBRARY": "/env/lib", "SKILLSHELF_ALLOW_EXEC": "0"}
    )
    assert from_env.roots == [Path("/env/lib")] and not from_env.execution.enabled
    from_flags = resolve_settings([Path("/flag/lib")], config_path=config, env={}, execution={"timeout_s": 9.0})
    assert from_flags.roots == [Path("/flag/lib")] and from_flags.execution.timeout_s == 9.0


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("librar = []", "librar"), ("[execution]\ntimeout_s = -1", "timeout_s"), ("not toml = = 1", "not valid TOML")],
)
def test_a_bad_config_file_names_what_to_fix(tmp_path: Path, text: str, fragment: str) -> None:
    config = write(tmp_path / "config.toml", text)
    with pytest.raises(SkillshelfError) as raised:
        resolve_settings(config_path=config, env={})
    assert fragment in raised.value.message and str(tmp_path) in raised.value.message


def test_a_named_config_file_must_exist_but_the_default_one_is_optional(tmp_path: Path) -> None:
    with pytest.raises(SkillshelfError):
        resolve_settings(config_path=tmp_path / "missing.toml", env={})
    assert resolve_settings(env={"XDG_CONFIG_HOME": str(tmp_path)}).execution.enabled is False


def test_variables_nest_with_a_double_underscore_and_beat_the_file(tmp_path: Path) -> None:
    config = write(tmp_path / "config.toml", "view = 'agent'\n[execution]\ntimeout_s = 5\nmemory_mb = 64\n")
    env = {"SKILLSHELF_EXECUTION__TIMEOUT_S": "7", "SKILLSHELF_VIEW": "memory", "SKILLSHELF_CACHE_DIR": "/c"}
    settings = resolve_settings(config_path=config, env=env)
    assert settings.execution.timeout_s == 7 and settings.execution.memory_mb == 64 and settings.view == "memory"
    assert resolve_settings(config_path=config, env=env, view="curator").view == "curator"


def test_library_takes_one_string_or_a_list_and_variables_expand(tmp_path: Path) -> None:
    config = write(tmp_path / "config.toml", 'library = "${LIBS}/one"\nprojects = ["${LIBS}/dev"]\n')
    settings = resolve_settings(config_path=config, env={"LIBS": str(tmp_path)})
    assert settings.roots == [tmp_path / "one"] and settings.project_roots == [tmp_path / "dev"]
    with pytest.raises(SkillshelfError) as unset:
        resolve_settings(config_path=config, env={})
    assert "${LIBS} is used in the config file but not set" in unset.value.message


def test_unknown_keys_and_bad_views_are_errors_with_their_key_path(tmp_path: Path) -> None:
    config = write(
        tmp_path / "config.toml",
        """
        [views.team]
        exposure = "hidden"
        tools = [{include = "tag:x"}]
        colour = "red"
        """,
    )
    with pytest.raises(SkillshelfError) as raised:
        resolve_settings(config_path=config, env={})
    message = raised.value.message
    for fragment in ("views.team.exposure", "views.team.tools", "apply to skills", "views.team.colour"):
        assert fragment in message, fragment


def test_the_default_config_file_is_the_platform_one(tmp_path: Path) -> None:
    write(tmp_path / "skillshelf" / "config.toml", "view = 'curator'\n")
    assert resolve_settings(env={"XDG_CONFIG_HOME": str(tmp_path)}).view == "curator"
    assert resolve_settings(env={"XDG_CONFIG_HOME": str(tmp_path / "none")}).view == "default"


def test_the_test_environment_hides_the_developers_configuration(isolated_environment: Path) -> None:
    """Guards the autouse fixture: a real SKILLSHELF_* variable or home folder would make tests lie."""
    leaked = sorted(
        n
        for n in os.environ
        if n.startswith("SKILLSHELF_") and n not in ("SKILLSHELF_CACHE_DIR", "SKILLSHELF_STATE_DIR")
    )
    assert leaked == []
    assert Path.home() == isolated_environment
    for variable in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        assert Path(os.environ[variable]).is_relative_to(isolated_environment)
