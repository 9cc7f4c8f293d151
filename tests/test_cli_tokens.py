"""`skillshelf token new`: the token printed once, only its hash written to the config file."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.config.auth import token_digest


def test_token_new_prints_the_token_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('library = ["~/skills"]\n\n[views.readers]\ndescription = "read only"\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "alice", "--view", "readers"])
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert len(secret) >= 40
    stored = config.read_text(encoding="utf-8")
    assert secret not in stored
    parsed = tomllib.loads(stored)
    assert parsed["auth"]["tokens"]["alice"] == {"sha256": token_digest(secret), "views": ["readers"]}
    assert parsed["library"] == ["~/skills"]  # the rest of the file is kept

    again = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "alice"])
    assert again.exit_code != 0 and "already has a token 'alice'" in again.output
    unknown_view = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "bob", "--view", "writers"])
    assert unknown_view.exit_code != 0 and "no view 'writers'" in unknown_view.output
    bad_name = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "bad name"])
    assert bad_name.exit_code != 0


def test_token_new_writes_to_the_config_file_settings_read(tmp_path: Path) -> None:
    config = tmp_path / "team.toml"
    env = {"SKILLSHELF_CONFIG": str(config)}
    created = CliRunner().invoke(cli, ["token", "new", "alice"], env=env)
    assert created.exit_code == 0, created.output
    shown = json.loads(CliRunner().invoke(cli, ["config", "show", "--json"], env=env).output)
    assert shown["origins"]["auth.tokens.alice.sha256"] == str(config)


COMMENTED = """# my team's server  (kept as written)
library = ["~/skills"]   # where the skills are

[views.readers]
description = "read only"
tools = [{include = "search*"}]  # an inline table

[auth]
rate_per_s = 5.0  # slow down
"""


def test_token_new_keeps_the_config_files_comments_and_inline_tables_byte_for_byte(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(COMMENTED, encoding="utf-8")
    result = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "alice", "--view", "readers"])
    assert result.exit_code == 0, result.output
    stored = config.read_text(encoding="utf-8")
    assert stored.startswith(COMMENTED)  # every comment, key, spacing and inline table as the user wrote it
    added = tomllib.loads(stored)["auth"]["tokens"]["alice"]
    assert added == {"sha256": token_digest(result.stdout.strip()), "views": ["readers"]}


def test_token_new_adds_to_tokens_written_as_an_inline_table(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    first = '[auth]\ntokens = {bob = {sha256 = "%s", views = ["default"]}}  # bob\n' % ("0" * 64)
    config.write_text(first, encoding="utf-8")
    result = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "alice"])
    assert result.exit_code == 0, result.output
    tokens = tomllib.loads(config.read_text(encoding="utf-8"))["auth"]["tokens"]
    assert set(tokens) == {"bob", "alice"} and tokens["bob"]["sha256"] == "0" * 64
    assert "# bob" in config.read_text(encoding="utf-8")
