"""Settings precedence: flags, then environment, then the config file, then defaults."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from skillshelf.cli import cli
from skillshelf.config.auth import token_digest
from skillshelf.config.variables import leaves, variable_for
from skillshelf.errors import SkillshelfError
from skillshelf.library.index.places import LibraryConfig, choose_state_dir
from skillshelf.library.indexing.folders import user_cache_dir
from skillshelf.library.semantic.install import default_model_dir
from skillshelf.settings import (
    NOT_SETTINGS,
    ConfigLocation,
    Settings,
    SettingsError,
    UserSettings,
    config_location,
    resolve,
    resolve_settings,
)
from tests.conftest import write
from tests.live_server import refused_serve

SRC = Path(__file__).resolve().parents[1] / "src" / "skillshelf"


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


def test_a_misspelt_variable_is_an_error_naming_the_closest_real_one() -> None:
    with pytest.raises(SettingsError) as raised:
        resolve_settings(env={"SKILLSHELF_EXECUTON__TIMEOUT_S": "5"})
    assert raised.value.message == (
        "SKILLSHELF_EXECUTON__TIMEOUT_S is not a skillshelf setting; did you mean SKILLSHELF_EXECUTION__TIMEOUT_S?"
    )


@pytest.mark.parametrize(
    ("name", "closest"),
    [
        ("SKILLSHELF_EXECUTION__REQUIRE_ISOLATON", "SKILLSHELF_EXECUTION__REQUIRE_ISOLATION"),
        ("SKILLSHELF_AUTH__RATE_PER_SECOND", "SKILLSHELF_AUTH__RATE_PER_S"),
        ("SKILLSHELF_VIEWS__TEAM__EXPOSUR", "SKILLSHELF_VIEWS__TEAM__EXPOSURE"),
        ("SKILLSHELF_TOKEN", "SKILLSHELF_TOKENS"),
        ("SKILLSHELF_REQUIRE_ISOLATION", "SKILLSHELF_EXECUTION__REQUIRE_ISOLATION"),  # its table left out
        ("SKILLSHELF_VIEW__NAME", "SKILLSHELF_VIEW"),  # a value that takes no sub-keys
        ("skillshelf_librarry", "SKILLSHELF_LIBRARY"),  # read case-blind, so checked case-blind
    ],
)
def test_every_misspelt_variable_is_reported_whatever_its_depth(name: str, closest: str) -> None:
    with pytest.raises(SettingsError) as raised:
        resolve_settings(env={name: "1"})
    assert raised.value.problems == [f"{name} is not a skillshelf setting; did you mean {closest}?"]


def test_every_problem_of_every_source_is_reported_at_once(tmp_path: Path) -> None:
    config = write(tmp_path / "config.toml", "librar = '/x'\nwatch = false\n")
    env = {"SKILLSHELF_NOPE": "1", "SKILLSHELF_EXECUTION__TIMEOUT_S": "-1", "SKILLSHELF_EXECUTION__ALLOW": "py/*"}
    with pytest.raises(SettingsError) as raised:
        resolve_settings(env=env, config_path=config)
    problems = raised.value.problems
    where = str(config)
    assert f"{where}: librar: not a setting; did you mean 'library'?" in problems
    assert f"{where}: watch: not a setting" in problems  # a fact of a run (--no-watch), not a key
    assert "SKILLSHELF_NOPE is not a skillshelf setting (`skillshelf config show` lists them all)" in problems
    assert "SKILLSHELF_EXECUTION__TIMEOUT_S: execution.timeout_s: Input should be greater than 0" in problems
    assert any(p.startswith("SKILLSHELF_EXECUTION__ALLOW: execution.allow:") and "as JSON" in p for p in problems)
    assert len(problems) == 5, problems


def test_variables_that_are_not_settings_are_not_reported(tmp_path: Path) -> None:
    env = dict.fromkeys(NOT_SETTINGS, "x") | {"SKILLSHELF_CONFIG": str(tmp_path / "none.toml")}
    env |= {"SKILLSHELF_ALLOW_EXEC": "1", "SKILLSHELF_TOKENS": "ci=0123456789abcdef"}
    write(tmp_path / "none.toml", "")
    assert resolve_settings(env=env).execution.enabled


def test_every_skillshelf_variable_named_in_the_source_is_a_setting_or_listed_as_none() -> None:
    """A new variable given to a child process must be listed in NOT_SETTINGS, or it would be refused."""
    named = {m for path in SRC.rglob("*.py") for m in re.findall(r"\bSKILLSHELF_[A-Z0-9_]*[A-Z0-9]", path.read_text())}
    named -= {"SKILLSHELF_"}
    refused = []
    for name in sorted(named):
        try:
            resolve_settings(env={name: "1"} if name not in ("SKILLSHELF_CONFIG", "SKILLSHELF_TOKENS") else {})
        except SettingsError as exc:
            refused += [p for p in exc.problems if "is not a skillshelf setting" in p]
    assert refused == []
    assert "SKILLSHELF_SKILL_DIR" in NOT_SETTINGS


def test_only_settings_reads_skillshelf_variables_from_the_environment() -> None:
    reads = re.compile(r"(environ(\.get)?\s*[\[(]|getenv\()\s*[\"']SKILLSHELF_")
    readers = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if reads.search(p.read_text()))
    assert readers == []  # settings.py reads them through the model, never by a literal name


def test_each_setting_is_one_variable_and_shown_with_it_as_its_origin(tmp_path: Path) -> None:
    """Generated from the model: a new field is a variable and a line of `config show`, with nothing to list."""
    user_keys = {info.alias or name for name, info in UserSettings.model_fields.items()}
    baseline = resolve(env={}).settings.model_dump(mode="json", by_alias=True)
    settable = [(path, value) for path, value in leaves(baseline) if path[0] in user_keys]
    assert {path[0] for path, _ in settable} == user_keys and len(settable) > 25
    for path, value in settable:
        name = variable_for(path)
        text = (
            "postgresql://skillshelf@db.example/skillshelf"
            if path == ("database_url",)
            else as_variable(value, tmp_path)
        )
        assert resolve(env={name: text}).origin(path) == name
        shown = CliRunner().invoke(cli, ["config", "show"], env={name: text})
        assert shown.exit_code == 0, shown.output
        assert re.search(rf"^{re.escape('.'.join(map(str, path)))} = .*# {name}$", shown.output, re.M), name


def as_variable(value: object, unset: Path) -> str:
    """A value as a variable's text (the value itself, so any field's own validation accepts it)."""
    if value is None:
        return str(unset)  # the only unset settings are paths (and database_url, given above)
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def test_tokens_from_the_environment_join_the_files_as_digests_and_win_a_collision(tmp_path: Path) -> None:
    alice, ci = "alice-0123456789abcdef", "ci-token-0123456789abcdef"
    config = write(
        tmp_path / "config.toml",
        f"""
        [auth.tokens.alice]
        sha256 = "{token_digest(alice)}"
        [auth.tokens.ci]
        sha256 = "{"0" * 64}"
        """,
    )
    env = {"SKILLSHELF_TOKENS": f"ci={ci}=default+other, bot={ci}x"}
    settings = resolve_settings(config_path=config, env=env)
    assert settings.auth.tokens["alice"].sha256 == token_digest(alice)
    assert settings.auth.tokens["ci"].sha256 == token_digest(ci) and settings.auth.tokens["ci"].views == [
        "default",
        "other",
    ]
    assert settings.auth.tokens["bot"].views == ["default"]
    assert ci not in settings.model_dump_json()


def test_a_bad_token_entry_is_named_without_showing_the_token() -> None:
    secret = "s3cret-0123456789abcdef"
    for text in (secret, f"ci={secret[:8]}", f"bad name={secret}"):
        with pytest.raises(SettingsError) as raised:
            resolve_settings(env={"SKILLSHELF_TOKENS": f"ok={secret},{text}"})
        (problem,) = raised.value.problems
        assert problem.startswith("SKILLSHELF_TOKENS: entry 2") and secret[:8] not in problem, problem


def test_the_settings_are_frozen_and_round_trip_as_json_to_http_workers(tmp_path: Path) -> None:
    config = write(
        tmp_path / "config.toml",
        f"""
        library = ["{tmp_path / "lib"}"]
        semantic_model = "~/model"
        [views.team]
        exposure = "search"
        tools = [{{exclude = "get*"}}]
        [views.team.overrides.loadSkill]
        pinned = {{includeCode = true}}
        [auth.tokens.ci]
        sha256 = "{"a" * 64}"
        """,
    )
    env = {"SKILLSHELF_CACHE_DIR": str(tmp_path / "c"), "SKILLSHELF_EXECUTION__ALLOW": '["python/*"]'}
    settings = resolve_settings(config_path=config, env=env, watch=False, http_host="0.0.0.0")
    assert Settings.model_validate_json(settings.model_dump_json()) == settings
    with pytest.raises(ValidationError):
        settings.view = "full"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        settings.execution.enabled = True  # type: ignore[misc]


def test_the_folders_are_settings_that_reach_the_code_using_them(tmp_path: Path) -> None:
    env = {f"SKILLSHELF_{kind.upper()}_DIR": str(tmp_path / kind) for kind in ("cache", "state", "data")}
    settings = resolve_settings([tmp_path / "missing"], env=env)
    assert settings.call_log.path == tmp_path / "state" / "calls.jsonl"
    assert choose_state_dir(settings.library_config()) == tmp_path / "cache"  # no writable root: the cache
    assert default_model_dir(data_dir=settings.data_dir) == tmp_path / "data" / "models" / "all-MiniLM-L6-v2"
    configured = write(tmp_path / "config.toml", "[call_log]\npath = '~/calls.jsonl'\n")
    assert resolve_settings(env=env, config_path=configured).call_log.path == Path.home() / "calls.jsonl"


def test_library_code_takes_the_cache_folder_from_settings_not_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSHELF_CACHE_DIR", str(tmp_path / "from-the-environment"))
    config = LibraryConfig(roots=[tmp_path / "missing"], cache_dir=tmp_path / "from-settings")
    assert choose_state_dir(config) == tmp_path / "from-settings"
    assert choose_state_dir(LibraryConfig(roots=[tmp_path / "missing"])) == user_cache_dir()
    assert user_cache_dir() != tmp_path / "from-the-environment"


def test_one_place_decides_which_config_file_is_read(tmp_path: Path) -> None:
    named = tmp_path / "named.toml"
    assert config_location(tmp_path / "flag.toml", {"SKILLSHELF_CONFIG": str(named)}).named_by == "--config"
    assert config_location(None, {"SKILLSHELF_CONFIG": str(named)}) == ConfigLocation(named, "SKILLSHELF_CONFIG")
    assert config_location(None, {"XDG_CONFIG_HOME": str(tmp_path)}).path == tmp_path / "skillshelf" / "config.toml"
    with pytest.raises(SettingsError) as raised:
        resolve_settings(env={"SKILLSHELF_CONFIG": str(named)})
    assert raised.value.message == f"config file {named} (from SKILLSHELF_CONFIG) does not exist"


def test_a_server_with_a_misspelt_variable_refuses_to_start_and_says_why(sample_root: Path) -> None:
    env = {"SKILLSHELF_REQUIRE_ISOLATION": "true"}  # once ignored: skills ran unsandboxed
    done = refused_serve("-l", str(sample_root), env=env)  # refused as the settings are read, stdio or HTTP
    assert done.exit_code == 1 and done.stdout == ""
    assert (
        "SKILLSHELF_REQUIRE_ISOLATION is not a skillshelf setting; "
        "did you mean SKILLSHELF_EXECUTION__REQUIRE_ISOLATION?" in done.stderr
    )


@pytest.mark.parametrize("value", ["1000000000000", "99999999999999999999999999"])
def test_a_huge_max_file_bytes_is_refused_naming_the_most_it_may_be(value: str) -> None:
    """Each read sets aside `max_file_bytes` at once: a trillion made every read of every skill fail."""
    with pytest.raises(SettingsError) as raised:
        resolve_settings(env={"SKILLSHELF_MAX_FILE_BYTES": value})
    (problem,) = raised.value.problems
    assert problem.startswith("SKILLSHELF_MAX_FILE_BYTES: max_file_bytes:") and "268435456" in problem, problem


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("execution", "memory_mb"),
        ("execution", "run_memory_mb"),
        ("execution", "work_dir_mb"),
        ("execution", "tmp_mb"),
        ("execution", "max_output_bytes"),
        ("execution", "max_stderr_bytes"),
        ("auth", "max_request_bytes"),
    ],
)
def test_a_size_beyond_its_ceiling_is_refused_naming_the_setting(tmp_path: Path, section: str, key: str) -> None:
    """A trillion-fold size became an rlimit that overflowed, or a buffer held in memory: refused where the config
    enters, naming the setting and the most it may be."""
    config = write(tmp_path / "config.toml", f"[{section}]\n{key} = 1000000000000000\n")
    with pytest.raises(SkillshelfError) as raised:
        resolve_settings(config_path=config, env={})
    assert key in raised.value.message and "less than or equal to" in raised.value.message, raised.value.message
