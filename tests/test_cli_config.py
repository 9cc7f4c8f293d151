"""`config validate|show|schema`, `views`, `explain` and `serve --include/--exclude`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.cli.rules import glued_flag_message, ordered_rules
from skillshelf.cli.setting_flags import FLAGS, SettingFlag
from skillshelf.config.variables import leaves
from skillshelf.settings import resolve
from tests.conftest import write


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_validate_names_every_problem_with_its_key_path_and_exits_1(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.toml",
        """
        librar = "/x"
        [execution]
        timeout_s = -1
        [views.team]
        tools = [{include = "quality>=3"}]
        """,
    )
    code, output = run("config", "validate", "--config", str(config))
    assert code == 1
    for key in (
        f"{config}: librar: not a setting; did you mean 'library'?",
        f"{config}: execution.timeout_s: Input should be greater than 0",
        f"{config}: views.team.tools:",
        "3 problem(s)",
    ):
        assert key in output, key


def test_validate_reports_a_misspelt_variable_too(tmp_path: Path) -> None:
    config = write(tmp_path / "c.toml", "view = 'agent'\n")
    result = CliRunner().invoke(
        cli, ["config", "validate", "--config", str(config)], env={"SKILLSHELF_EXECUTON__TIMEOUT_S": "5"}
    )
    assert result.exit_code == 1
    assert "did you mean SKILLSHELF_EXECUTION__TIMEOUT_S?" in result.output and "1 problem(s)" in result.output


def test_validate_checks_pinned_arguments_against_the_tools(tmp_path: Path, sample_root: Path) -> None:
    config = write(
        tmp_path / "c.toml",
        f"""
        library = "{sample_root}"
        [views.team.overrides.loadSkill]
        pinned = {{category = "python"}}
        """,
    )
    code, output = run("--config", str(config), "config", "validate")
    assert code == 1 and "views.team.overrides.loadSkill.pinned names ['category']" in output
    good = write(tmp_path / "good.toml", f'library = "{sample_root}"\n[views.team]\nexposure = "search"\n')
    code, output = run("config", "validate", "--config", str(good))
    assert code == 0 and output.strip().endswith("valid")


def test_show_gives_each_value_with_the_flag_variable_or_file_it_came_from(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.toml",
        f"""
        view = "curator"
        [execution]
        timeout_s = 5
        memory_mb = 64
        [auth.tokens.ci]
        sha256 = "{"a" * 64}"
        """,
    )
    args = ["--config", str(config), "config", "show", "--exec-timeout", "9", "-l", str(tmp_path / "lib")]
    result = CliRunner().invoke(cli, args, env={"SKILLSHELF_VIEW": "memory", "SKILLSHELF_EXECUTION__CPU_S": "7"})
    assert result.exit_code == 0, result.output
    lines = {line.split(" = ")[0]: line for line in result.output.splitlines() if " = " in line}
    assert re.search(r"^execution.timeout_s = 9.0 +# --exec-timeout$", lines["execution.timeout_s"])
    assert re.search(rf"^library = \[\"{re.escape(str(tmp_path / 'lib'))}\"\] +# --library$", lines["library"])
    assert re.search(r'^view = "memory" +# SKILLSHELF_VIEW$', lines["view"])  # the variable beats the file
    assert re.search(r"^execution.cpu_s = 7 +# SKILLSHELF_EXECUTION__CPU_S$", lines["execution.cpu_s"])
    assert re.search(rf"^execution.memory_mb = 64 +# {re.escape(str(config))}$", lines["execution.memory_mb"])
    assert re.search(r"^execution.max_processes = 32 +# default$", lines["execution.max_processes"])
    assert re.search(r'^auth.tokens.ci.sha256 = "\*{8}" ', lines["auth.tokens.ci.sha256"])
    assert "a" * 64 not in result.output
    assert result.output.splitlines()[0] == f"# config file: {config} (--config)"


def test_show_gives_the_database_url_without_its_password() -> None:
    url = "postgresql://skillshelf:s3cret-pw@db.example:5432/shelf?sslmode=require&password=other-pw"
    result = CliRunner().invoke(cli, ["config", "show", "--json"], env={"SKILLSHELF_DATABASE_URL": url})
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)["settings"]["database_url"]
    assert shown == "postgresql://skillshelf:***@db.example:5432/shelf?sslmode=require&password=***"
    assert "s3cret-pw" not in result.output and "other-pw" not in result.output


def test_a_database_url_that_is_not_postgresql_is_refused_without_showing_its_password() -> None:
    result = CliRunner().invoke(
        cli, ["config", "show"], env={"SKILLSHELF_DATABASE_URL": "mysql://root:s3cret-pw@db.example/shelf"}
    )
    assert result.exit_code != 0
    assert "the known schemes are file://, postgresql://" in result.output
    assert "SKILLSHELF_DATABASE_URL" in result.output
    assert "s3cret-pw" not in result.output


def test_show_json_holds_the_settings_and_their_origins(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["config", "show", "--json", "--view", "full"], env={"SKILLSHELF_TOKENS": "ci=0123456789abcdef"}
    )
    shown = json.loads(result.output)
    assert shown["settings"]["view"] == "full" and shown["origins"]["view"] == "--view"
    assert shown["settings"]["auth"]["tokens"]["ci"]["sha256"] == "********"
    assert shown["origins"]["auth.tokens.ci.sha256"] == "SKILLSHELF_TOKENS"
    assert shown["origins"]["execution.timeout_s"] == "default"


@pytest.mark.parametrize("flag", FLAGS, ids=lambda flag: flag.declaration)
def test_each_setting_flag_sets_its_key(flag: SettingFlag, tmp_path: Path) -> None:
    """Generated from the flag table: every flag names a real key, sets it (shown as its doing in `config
    show`), and is a flag of `serve`: a new flag is one line of the table."""
    given = example_arguments(flag, tmp_path)
    result = CliRunner().invoke(cli, ["config", "show", "--json", *given])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["origins"][flag.key] == flag.declaration
    assert flag.declaration in CliRunner().invoke(cli, ["serve", "--help"]).output  # serve takes every one


def example_arguments(flag: SettingFlag, folder: Path) -> list[str]:
    """The flag with a value its setting accepts whatever its type: the default, or a folder for a list."""
    if flag.options.get("is_flag"):
        return [flag.declaration]
    defaults = dict(leaves(resolve(env={}).settings.model_dump(mode="json", by_alias=True)))
    value = defaults[tuple(flag.key.split("."))]
    if isinstance(value, list):
        value = value[0] if value else str(folder)
    if value is None:  # the one setting unset by default that takes a flag
        value = "postgresql://skillshelf@db.example/skillshelf"
    return [flag.declaration, str(value)]


def test_schema_is_the_config_files_json_schema() -> None:
    code, output = run("config", "schema")
    schema = json.loads(output)
    assert code == 0 and schema["additionalProperties"] is False
    assert {"library", "views", "execution", "view"} <= set(schema["properties"])


def test_views_lists_each_view_with_its_tools_and_token_cost(sample_root: Path) -> None:
    code, output = run("views", "-l", str(sample_root), "--json")
    rows = {row["view"]: row for row in json.loads(output)}
    assert code == 0 and set(rows) == {"agent", "curator", "default", "full", "memory"}
    assert rows["default"]["tools"] == rows["agent"]["tools"] and len(rows["full"]["tools"]) == 17
    assert rows["default"]["tokens"] <= 1500 < rows["full"]["tokens"]


def test_explain_says_which_rule_decided_for_a_tool_and_a_skill(tmp_path: Path, sample_root: Path) -> None:
    config = write(
        tmp_path / "c.toml",
        """
        [views.team]
        tools = [{exclude = "get*"}]
        skills = [{exclude = "tag:postgres"}, {include = "**"}]
        """,
    )
    code, output = run("--config", str(config), "explain", "getNotes", "--view", "team", "-l", str(sample_root))
    assert code == 0 and "tool getNotes is hidden in view 'team': rule 1 (exclude 'get*') matched first" in output
    code, output = run(
        "--config", str(config), "explain", "database/rls-policy", "--view", "team", "-l", str(sample_root)
    )
    assert "skill database/rls-policy is hidden" in output and "exclude 'tag:postgres'" in output
    code, output = run("--config", str(config), "explain", "nothing/here", "-l", str(sample_root))
    assert code == 1 and "no tool or skill 'nothing/here'" in output


def test_include_and_exclude_keep_their_command_line_order() -> None:
    args = ["-l", "x", "--exclude", "a*", "--include=b*", "--include", "c", "--", "--exclude", "z"]
    assert ordered_rules(args) == [("exclude", "a*"), ("include", "b*"), ("include", "c")]


def test_a_flag_and_its_value_in_one_argument_is_explained() -> None:
    message = glued_flag_message("--include searchPatterns")
    assert message is not None and '"--include", "searchPatterns"' in message
    assert glued_flag_message("--exclude=x") is None and glued_flag_message("plain") is None
    code, output = run("serve", "--exclude get*")
    assert code == 2 and "Malformed argument" in output


def test_serve_refuses_an_unknown_view(sample_root: Path) -> None:
    code, output = run("serve", "-l", str(sample_root), "--view", "nope")
    assert code == 1 and "no view 'nope'" in output
