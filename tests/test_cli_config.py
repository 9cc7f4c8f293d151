"""`config validate|show|schema`, `views`, `explain` and `serve --include/--exclude`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.cli.rules import glued_flag_message, ordered_rules
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
    for key in ("librar: Extra inputs", "execution.timeout_s:", "views.team.tools:", "3 problem(s)"):
        assert key in output, key


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


def test_show_merges_the_environment_and_masks_secrets(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.toml",
        f"""
        [auth.tokens.ci]
        sha256 = "{"a" * 64}"
        """,
    )
    result = CliRunner().invoke(
        cli, ["config", "show", "--resolved", "--config", str(config)], env={"SKILLSHELF_VIEW": "memory"}
    )
    shown = json.loads(result.output)
    assert shown["view"] == "memory" and shown["auth"]["tokens"]["ci"]["sha256"] == "********"
    assert "a" * 64 not in result.output


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
