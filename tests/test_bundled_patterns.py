"""Tests for the bundled example skill library in ``patterns/``.

The implementations are loaded by file path (never through the ``skillshelf`` package), the
bundled scripts are run as real subprocesses, and the whole tree is checked for structure:
metadata types, input schemas against ``run`` and the named function, Agent Skills rules and
quality breakdown arithmetic.
"""

from __future__ import annotations

import ast
import datetime as dt
import functools
import importlib.util
import inspect
import io
import json
import logging
import random
import re
import sqlite3
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.conftest import deadline

PATTERNS = Path(__file__).resolve().parents[1] / "patterns"
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
CRITERIA = ("Correctness", "Reusability", "Documentation", "Test Coverage", "Performance")
YAML_META_KEYS = {"description", "tags", "quality", "language", "last_verified", "input_schema"}
AGENT_KEYS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}


# ---------------------------------------------------------------------------------------------
# Discovery helpers
# ---------------------------------------------------------------------------------------------


def categories() -> list[Path]:
    return sorted(path for path in PATTERNS.iterdir() if path.is_dir() and not path.name.startswith("."))


def three_file_ids() -> list[str]:
    return sorted(
        f"{category.name}/{doc.stem}"
        for category in categories()
        for doc in category.glob("*.md")
        if not doc.name.endswith("-SKILL.md")
    )


def agent_skill_dirs() -> list[Path]:
    return sorted(path.parent for path in PATTERNS.glob("*/*/SKILL.md"))


def implementation_ids() -> list[str]:
    return sorted(f"{path.parent.name}/{path.stem}" for path in PATTERNS.glob("*/*.py"))


def metadata_files() -> list[Path]:
    return sorted(PATTERNS.glob("*/*-SKILL.md"))


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Return (frontmatter YAML text or None, body)."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---", 4)
    assert end != -1, "frontmatter is never closed"
    rest = text[end + 4 :]
    assert rest == "" or rest.startswith("\n"), "closing --- must be on its own line"
    return text[4:end], rest.lstrip("\n")


def yaml_metadata_files() -> list[Path]:
    return [path for path in metadata_files() if path.read_text(encoding="utf-8").startswith("---\n")]


def bold_metadata_files() -> list[Path]:
    return [path for path in metadata_files() if not path.read_text(encoding="utf-8").startswith("---\n")]


def load_yaml_meta(path: Path) -> dict[str, Any]:
    front, _ = split_frontmatter(path.read_text(encoding="utf-8"))
    assert front is not None
    data = yaml.safe_load(front)
    assert isinstance(data, dict)
    return data


@functools.cache
def load(skill_id: str) -> ModuleType:
    """Import ``patterns/<skill_id>.py`` by file path under a private module name."""
    path = PATTERNS / f"{skill_id}.py"
    module_name = "bundled_" + re.sub(r"[^a-z0-9]", "_", skill_id)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    previous = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # never write __pycache__ into the bundled library
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = previous
    return module


def named_function(skill_id: str) -> Any:
    return getattr(load(skill_id), skill_id.split("/")[1].replace("-", "_"))


def parse_bold(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    fields = dict(re.findall(r"^\*\*([^*]+):\*\* (.+)$", text, flags=re.MULTILINE))
    rows = re.findall(r"^\| ([A-Za-z ]+?) \| (\d+(?:\.\d+)?)/10 \| (.+?) \|$", text, flags=re.MULTILINE)
    return {"fields": fields, "rows": rows, "text": text}


def mean_rounded(scores: list[float]) -> float:
    mean = Decimal(str(sum(scores))) / Decimal(len(scores))
    return float(mean.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def hidden(path: Path) -> bool:
    """Dot-folders and dot-files (an index a server wrote, an editor's state) are not the library's content."""
    return any(part.startswith(".") for part in path.relative_to(PATTERNS).parts)


def all_markdown_files() -> list[Path]:
    return sorted(path for path in PATTERNS.rglob("*.md") if not hidden(path))


def all_files() -> list[Path]:
    return sorted(
        path for path in PATTERNS.rglob("*") if path.is_file() and "__pycache__" not in path.parts and not hidden(path)
    )


def rel(path: Path) -> str:
    return path.relative_to(PATTERNS).as_posix()


# ---------------------------------------------------------------------------------------------
# Structure of the whole tree
# ---------------------------------------------------------------------------------------------


def test_library_has_enough_skills_categories_and_layouts() -> None:
    three_file = three_file_ids()
    agent = agent_skill_dirs()
    metas = metadata_files()
    bold = bold_metadata_files()
    table_only = [path for path in bold if "Overall Score" not in parse_bold(path)["fields"]]
    assert len(three_file) + len(agent) >= 22
    assert len(categories()) >= 7
    assert len(three_file) >= 16
    assert len(agent) >= 4
    assert len(implementation_ids()) >= 10
    assert len(metas) >= 12
    assert len(bold) >= 4 and len(yaml_metadata_files()) >= 1
    assert 1 <= len(table_only) <= 2
    assert sum(1 for path in agent if (path / "scripts").is_dir()) >= 2
    assert sum(1 for path in agent if (path / "references").is_dir()) >= 2


def test_skill_ids_are_unique_across_layouts() -> None:
    ids = three_file_ids() + [f"{path.parent.name}/{path.name}" for path in agent_skill_dirs()]
    assert len(ids) == len(set(ids))


def test_category_and_skill_names_follow_naming_rules() -> None:
    for category in categories():
        assert NAME_RE.match(category.name), category.name
    for skill_id in three_file_ids():
        name = skill_id.split("/")[1]
        assert NAME_RE.match(name) and len(name) <= 64, skill_id
    for path in agent_skill_dirs():
        assert NAME_RE.match(path.name) and len(path.name) <= 64, path


def test_only_a_top_level_readme_exists_in_patterns() -> None:
    readmes = [rel(path) for path in PATTERNS.rglob("*") if path.name.lower().startswith("readme") and not hidden(path)]
    assert readmes == ["README.md"]


def test_every_python_file_and_metadata_file_belongs_to_a_docs_file() -> None:
    docs = set(three_file_ids())
    for skill_id in implementation_ids():
        assert skill_id in docs, f"{skill_id}.py has no {skill_id}.md"
    for path in metadata_files():
        skill_id = f"{path.parent.name}/{path.name.removesuffix('-SKILL.md')}"
        assert skill_id in docs, f"{rel(path)} has no docs file"


@pytest.mark.parametrize("path", all_files(), ids=rel)
def test_every_file_is_clean_utf8_text_with_lf_endings(path: Path) -> None:
    data = path.read_bytes()
    assert not data.startswith(b"\xef\xbb\xbf"), "BOM"
    text = data.decode("utf-8")
    assert "\r" not in text, "CR line ending"
    assert text.endswith("\n") and not text.endswith("\n\n"), "must end with exactly one newline"
    for number, line in enumerate(text.split("\n"), start=1):
        assert line == line.rstrip(), f"trailing whitespace on line {number}"
    lowered = text.lower()
    for marker in ("todo", "fixme", "lorem ipsum", "tbd:"):
        assert marker not in lowered, f"placeholder marker {marker!r}"


@pytest.mark.parametrize("path", all_markdown_files(), ids=rel)
def test_fenced_code_blocks_declare_a_language(path: Path) -> None:
    fence: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        match = re.match(r"^(`{3,})(.*)$", stripped)
        if not match:
            continue
        ticks, info = match.groups()
        if fence is None:
            assert info.strip(), f"line {number}: opening fence without a language"
            fence = ticks
        elif ticks == fence and not info.strip():
            fence = None
    assert fence is None, "unclosed code fence"


@pytest.mark.parametrize("skill_id", three_file_ids())
def test_docs_start_with_a_title_and_a_one_line_description(skill_id: str) -> None:
    text = (PATTERNS / f"{skill_id}.md").read_text(encoding="utf-8")
    assert not text.startswith("---"), "docs files carry no frontmatter"
    lines = text.split("\n")
    assert lines[0].startswith("# ") and len(lines[0]) > 2
    assert lines[1] == "" and lines[2] and lines[3] == "", "one single-line paragraph after the title"
    description = lines[2]
    assert 20 <= len(description) <= 300
    assert "<" not in description and ">" not in description
    assert not description.startswith(("#", "-", "|", "`"))
    headings = [line for line in lines if line.startswith("## ")]
    assert len(headings) >= 3
    assert "## When to use" in headings and "## Pitfalls" in headings
    assert "```" in text
    assert 60 <= len(lines) <= 260


# ---------------------------------------------------------------------------------------------
# Metadata: YAML frontmatter style
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", yaml_metadata_files(), ids=rel)
def test_yaml_metadata_has_the_documented_keys_and_types(path: Path) -> None:
    meta = load_yaml_meta(path)
    assert set(meta) <= YAML_META_KEYS, set(meta) - YAML_META_KEYS
    description = meta["description"]
    assert isinstance(description, str) and 20 <= len(description) <= 300
    assert "<" not in description and ">" not in description and "\n" not in description
    tags = meta["tags"]
    assert isinstance(tags, list) and tags
    assert all(isinstance(tag, str) and NAME_RE.match(tag) for tag in tags)
    quality = meta["quality"]
    assert isinstance(quality, (int, float)) and not isinstance(quality, bool) and 0 <= quality <= 10
    assert isinstance(meta["language"], str) and meta["language"] == meta["language"].lower()
    verified = meta["last_verified"]
    assert isinstance(verified, str) and DATE_RE.match(verified), "last_verified must be a quoted date"
    dt.date.fromisoformat(verified)
    has_code = path.with_name(path.name.removesuffix("-SKILL.md") + ".py").exists()
    assert ("input_schema" in meta) == has_code


def yaml_skills_with_code() -> list[str]:
    return [
        f"{path.parent.name}/{path.name.removesuffix('-SKILL.md')}"
        for path in yaml_metadata_files()
        if "input_schema" in load_yaml_meta(path)
    ]


def documented_run_keys(skill_id: str) -> set[str]:
    doc = inspect.getdoc(load(skill_id).run) or ""
    match = re.search(r"Input keys(.*?)Returns", doc, flags=re.DOTALL)
    assert match, "run's docstring must list its input keys before 'Returns'"
    return set(re.findall(r"``(\w+)``", match.group(1)))


@pytest.mark.parametrize("skill_id", yaml_skills_with_code())
def test_input_schema_matches_run_keys_and_the_named_function(skill_id: str) -> None:
    category, name = skill_id.split("/")
    schema = load_yaml_meta(PATTERNS / category / f"{name}-SKILL.md")["input_schema"]
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    properties = schema["properties"]
    assert isinstance(properties, dict)
    parameters = inspect.signature(named_function(skill_id)).parameters
    assert set(properties) == set(parameters)
    assert set(properties) == documented_run_keys(skill_id)
    required = {key for key, param in parameters.items() if param.default is inspect.Parameter.empty}
    assert set(schema["required"]) == required


@pytest.mark.parametrize("skill_id", implementation_ids())
def test_run_docstring_lists_exactly_the_named_function_parameters(skill_id: str) -> None:
    parameters = inspect.signature(named_function(skill_id)).parameters
    assert documented_run_keys(skill_id) == set(parameters)


@pytest.mark.parametrize("skill_id", yaml_skills_with_code())
def test_input_schemas_use_only_keywords_the_bundled_validator_supports(skill_id: str) -> None:
    category, name = skill_id.split("/")
    schema = load_yaml_meta(PATTERNS / category / f"{name}-SKILL.md")["input_schema"]
    validate = load("api/validate-json-input").validate_json_input
    for case_input in [case[1] for case in RUN_CASES if case[0] == skill_id]:
        assert validate(case_input, schema) == {"valid": True, "errors": []}
    assert validate({"unexpected_key": 1}, schema)["valid"] is False


@pytest.mark.parametrize("skill_id", yaml_skills_with_code())
def test_input_schemas_are_valid_draft_2020_12_and_accept_the_sample_inputs(skill_id: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    category, name = skill_id.split("/")
    schema = load_yaml_meta(PATTERNS / category / f"{name}-SKILL.md")["input_schema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for case_input in [case[1] for case in RUN_CASES if case[0] == skill_id]:
        assert not list(validator.iter_errors(case_input))


# ---------------------------------------------------------------------------------------------
# Metadata: bold-field style
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", bold_metadata_files(), ids=rel)
def test_bold_metadata_has_fields_and_a_consistent_breakdown(path: Path) -> None:
    parsed = parse_bold(path)
    fields: dict[str, str] = parsed["fields"]
    assert parsed["text"].startswith("# Skill: ")
    assert fields["Category"] == path.parent.name
    assert fields["Language"]
    assert DATE_RE.match(fields["Last Verified"])
    assert fields["Reuse Count"].isdigit()
    assert "## Quality Breakdown" in parsed["text"]
    rows = parsed["rows"]
    assert tuple(row[0] for row in rows) == CRITERIA
    scores = [float(row[1]) for row in rows]
    assert all(0 <= score <= 10 for score in scores)
    if "Overall Score" in fields:
        overall = re.fullmatch(r"(\d+(?:\.\d)?)/10", fields["Overall Score"])
        assert overall, fields["Overall Score"]
        assert float(overall.group(1)) == mean_rounded(scores)
    if "Quality Score" in fields:
        declared = re.fullmatch(r"(\d+(?:\.\d)?)/10", fields["Quality Score"])
        assert declared and 0 <= float(declared.group(1)) <= 10
    else:
        assert "Overall Score" not in fields, "table-only style has neither score line"


def test_weak_test_coverage_is_admitted_in_the_notes() -> None:
    for path in bold_metadata_files():
        rows = {row[0]: (float(row[1]), row[2]) for row in parse_bold(path)["rows"]}
        score, note = rows["Test Coverage"]
        if score < 6:
            assert re.search(r"no |not |only|nothing", note, flags=re.IGNORECASE), rel(path)


def declared_qualities() -> dict[str, float]:
    qualities: dict[str, float] = {}
    for path in yaml_metadata_files():
        qualities[rel(path)] = float(load_yaml_meta(path)["quality"])
    for path in bold_metadata_files():
        parsed = parse_bold(path)
        declared = parsed["fields"].get("Quality Score")
        if declared:
            qualities[rel(path)] = float(declared.split("/")[0])
        else:
            qualities[rel(path)] = mean_rounded([float(row[1]) for row in parsed["rows"]])
    for folder in agent_skill_dirs():
        front, _ = split_frontmatter((folder / "SKILL.md").read_text(encoding="utf-8"))
        meta = yaml.safe_load(front or "")
        qualities[rel(folder)] = float(meta["metadata"]["quality"])
    return qualities


def test_quality_scores_are_honest_and_varied() -> None:
    qualities = declared_qualities()
    assert all(6.0 <= value <= 9.5 for value in qualities.values()), qualities
    assert len(set(qualities.values())) >= 8
    assert max(qualities.values()) - min(qualities.values()) >= 2.0


# ---------------------------------------------------------------------------------------------
# Agent Skills folders
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", agent_skill_dirs(), ids=rel)
def test_agent_skill_frontmatter_follows_the_specification(folder: Path) -> None:
    front, body = split_frontmatter((folder / "SKILL.md").read_text(encoding="utf-8"))
    assert front is not None
    meta = yaml.safe_load(front)
    assert set(meta) <= AGENT_KEYS, set(meta) - AGENT_KEYS
    name = meta["name"]
    assert name == folder.name
    assert NAME_RE.match(name) and len(name) <= 64
    assert "anthropic" not in name and "claude" not in name
    description = meta["description"]
    assert isinstance(description, str) and 1 <= len(description) <= 1024
    assert "<" not in description and ">" not in description
    assert re.search(r"\bUse (when|for|to)\b", description), "say when to use it"
    if "license" in meta:
        assert isinstance(meta["license"], str)
    metadata = meta.get("metadata", {})
    assert isinstance(metadata, dict)
    assert all(isinstance(key, str) and isinstance(value, str) for key, value in metadata.items())
    assert len(body.splitlines()) < 500
    assert body.startswith("# ")


@pytest.mark.parametrize("folder", agent_skill_dirs(), ids=rel)
def test_agent_skill_relative_links_resolve_inside_the_folder(folder: Path) -> None:
    for markdown in folder.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+)\)", markdown.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                continue
            resolved = (markdown.parent / target).resolve()
            assert resolved.is_relative_to(folder.resolve()), target
            assert resolved.exists(), f"{rel(markdown)} links to missing {target}"


@pytest.mark.parametrize("folder", agent_skill_dirs(), ids=rel)
def test_agent_skill_bundled_files_are_linked_from_skill_md(folder: Path) -> None:
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    for sub in ("scripts", "references", "assets"):
        for path in (folder / sub).glob("*") if (folder / sub).is_dir() else []:
            assert f"({sub}/{path.name})" in text, f"{rel(path)} is not linked from SKILL.md"


def bundled_scripts() -> list[Path]:
    return sorted(path for path in PATTERNS.glob("*/*/scripts/*") if path.is_file())


@pytest.mark.parametrize("script", bundled_scripts(), ids=rel)
def test_bundled_scripts_have_a_shebang_and_are_executable(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    assert script.stat().st_mode & stat.S_IXUSR, "not executable"
    if script.suffix == ".py":
        assert text.startswith("#!/usr/bin/env python3\n")
        ast.parse(text)
    elif script.suffix == ".sh":
        assert text.startswith("#!/bin/sh\n")
        assert re.search(r"^set -eu$", text, flags=re.MULTILINE)
        assert "[[" not in text and "function " not in text, "POSIX sh only"
    else:
        pytest.fail(f"unexpected script type {script.name}")


def test_bundled_scripts_include_python_and_posix_shell() -> None:
    suffixes = {script.suffix for script in bundled_scripts()}
    assert {".py", ".sh"} <= suffixes


# ---------------------------------------------------------------------------------------------
# Implementations: shape
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("skill_id", implementation_ids())
def test_implementation_uses_only_the_standard_library_and_defines_only_at_import(skill_id: str) -> None:
    source = (PATTERNS / f"{skill_id}.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            roots = [(node.module or "").split(".")[0]]
        else:
            continue
        for root in roots:
            assert root == "__future__" or root in sys.stdlib_module_names, root
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
    for node in tree.body:
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        elif isinstance(node, ast.If):
            assert ast.unparse(node.test) == "__name__ == '__main__'"
        else:
            assert isinstance(node, allowed), ast.dump(node)[:80]
    assert ast.get_docstring(tree), "module docstring"


@pytest.mark.parametrize("skill_id", implementation_ids())
def test_implementation_exposes_a_typed_named_function_and_run(skill_id: str) -> None:
    module = load(skill_id)
    function = named_function(skill_id)
    assert inspect.getdoc(function)
    signature = inspect.signature(function)
    assert signature.return_annotation is not inspect.Signature.empty
    for param in signature.parameters.values():
        assert param.annotation is not inspect.Parameter.empty, param.name
        assert param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    run_signature = inspect.signature(module.run)
    assert list(run_signature.parameters) == ["input"]


# (skill id, run input, key of run's output that holds the named function's result or None)
RUN_CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("python/retry-backoff", {"max_attempts": 4, "base_delay": 0.5, "jitter": "none"}, "delays"),
    ("python/retry-backoff", {"max_attempts": 6, "jitter": "full", "seed": 7}, "delays"),
    ("python/retry-backoff", {"jitter": "none"}, "delays"),
    (
        "python/parse-env-config",
        {
            "environ": {"APP_PORT": "80a", "APP_DEBUG": "yes", "APP_DATABSE_URL": "postgres://x"},
            "spec": {"PORT": {"type": "int"}, "DEBUG": {"type": "bool"}, "DATABASE_URL": {"required": True}},
            "prefix": "APP_",
        },
        None,
    ),
    ("python/parse-env-config", {"environ": {}, "spec": {"PORT": {"type": "int", "default": 8080}}}, None),
    ("python/slugify", {"text": "Crème Brûlée: 10 Tips", "max_length": 20}, "slug"),
    ("python/slugify", {"text": "Hello World", "separator": "_", "lowercase": False}, "slug"),
    ("git/conventional-commit-lint", {"message": "feat(api)!: drop v1\n\nRefs: #88"}, None),
    ("git/conventional-commit-lint", {"message": "Fix stuff.", "max_header_length": 50}, None),
    (
        "git/conventional-commit-lint",
        {"message": "fix: x", "allowed_types": ["fix"], "require_scope": True},
        None,
    ),
    ("git/semver-bump", {"version": "1.4.2", "part": "minor"}, "version"),
    ("git/semver-bump", {"version": "v2.0.0", "part": "prerelease", "prerelease_id": "beta"}, "version"),
    ("api/token-bucket", {"capacity": 2, "refill_rate": 1, "request_times": [0, 0, 0, 0.5, 1.0]}, None),
    ("api/token-bucket", {"capacity": 5, "refill_rate": 0.5, "request_times": [], "cost": 2}, None),
    (
        "api/validate-json-input",
        {"data": {"a": 1}, "schema": {"type": "object", "required": ["b"], "additionalProperties": False}},
        None,
    ),
    (
        "api/validate-json-input",
        {"data": [1, 2], "schema": {"type": "array", "items": {"type": "integer"}}},
        None,
    ),
    (
        "database/keyset-pagination",
        {
            "table": "orders",
            "columns": ["id", "created_at"],
            "order_by": ["-created_at", "-id"],
            "page_size": 50,
        },
        None,
    ),
    (
        "database/keyset-pagination",
        {
            "table": "orders",
            "columns": ["id", "score"],
            "order_by": ["-score", "id"],
            "page_size": 10,
            "cursor": "WzMsN10",
            "paramstyle": "format",
        },
        None,
    ),
    ("security/redact-secrets", {"text": "password=hunter2 and postgres://u:pw@db/x"}, None),
    (
        "security/redact-secrets",
        {"text": "id 123-45-6789", "mask": "***", "extra_patterns": [r"\d{3}-\d{2}-\d{4}"]},
        None,
    ),
    (
        "security/safe-path-join",
        {"base": str(PATTERNS), "relative": "python/slugify.py", "must_exist": True},
        "path",
    ),
    ("security/safe-path-join", {"base": str(PATTERNS), "relative": "git/../api"}, "path"),
    (
        "security/webhook-hmac-verify",
        {
            "secrets": ["whsec_test"],
            "payload": '{"id":"evt_1","type":"invoice.paid"}',
            "signature_header": "t=1763630000,v1=db1535596f97fb8a5397ad3f5d2d1ffb7c1db0713ea18a54352372370e4f184b",
            "now": 1763630100,
        },
        None,
    ),
    (
        "security/webhook-hmac-verify",
        {"secrets": ["a", "b"], "payload": "{}", "signature_header": "garbage", "tolerance_seconds": 10},
        None,
    ),
]


@pytest.mark.parametrize(("skill_id", "case_input", "key"), RUN_CASES)
def test_run_returns_json_serialisable_output_equal_to_the_named_function(
    skill_id: str, case_input: dict[str, Any], key: str | None
) -> None:
    module = load(skill_id)
    output = module.run(json.loads(json.dumps(case_input)))
    assert isinstance(output, dict)
    assert json.loads(json.dumps(output)) == output
    direct = named_function(skill_id)(**case_input)
    assert (output if key is None else output[key]) == direct


def test_every_implementation_has_run_cases() -> None:
    assert {case[0] for case in RUN_CASES} == set(implementation_ids())


@pytest.mark.parametrize("skill_id", implementation_ids())
def test_implementation_runs_as_a_script_with_json_on_stdin(skill_id: str) -> None:
    case_input = next(case[1] for case in RUN_CASES if case[0] == skill_id)
    result = subprocess.run(
        [sys.executable, str(PATTERNS / f"{skill_id}.py")],
        input=json.dumps(case_input),
        capture_output=True,
        text=True,
        timeout=deadline(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == load(skill_id).run(case_input)


@pytest.mark.parametrize("skill_id", implementation_ids())
def test_implementation_script_reports_unknown_input_keys_as_a_json_error(skill_id: str) -> None:
    result = subprocess.run(
        [sys.executable, str(PATTERNS / f"{skill_id}.py")],
        input=json.dumps({"no_such_key": 1}),
        capture_output=True,
        text=True,
        timeout=deadline(),
        check=False,
    )
    assert result.returncode == 1
    assert "error" in json.loads(result.stdout)


# ---------------------------------------------------------------------------------------------
# python/retry-backoff
# ---------------------------------------------------------------------------------------------


def test_retry_backoff_without_jitter_doubles_until_the_cap() -> None:
    retry_backoff = load("python/retry-backoff").retry_backoff
    assert retry_backoff(6, 1.0, 5.0, 2.0, "none") == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_retry_backoff_full_jitter_stays_under_the_cap_and_is_reproducible_with_a_seed() -> None:
    retry_backoff = load("python/retry-backoff").retry_backoff
    delays = retry_backoff(8, 0.5, 4.0, 2.0, "full", seed=42)
    caps = [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    assert all(0 <= delay <= cap for delay, cap in zip(delays, caps, strict=True))
    assert delays == retry_backoff(8, 0.5, 4.0, 2.0, "full", seed=42)
    assert delays != retry_backoff(8, 0.5, 4.0, 2.0, "full", seed=43)


def test_retry_backoff_equal_jitter_waits_at_least_half_the_cap() -> None:
    delays = load("python/retry-backoff").retry_backoff(5, 2.0, 100.0, 3.0, "equal", seed=1)
    for delay, cap in zip(delays, [2.0, 6.0, 18.0, 54.0], strict=True):
        assert cap / 2 <= delay <= cap


def test_retry_backoff_single_attempt_has_no_delays() -> None:
    assert load("python/retry-backoff").retry_backoff(1) == []


def test_retry_backoff_huge_attempt_counts_do_not_overflow() -> None:
    delays = load("python/retry-backoff").retry_backoff(1000, 1.0, 60.0, 10.0, "none")
    assert len(delays) == 999 and delays[-1] == 60.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"max_attempts": 1001},
        {"max_attempts": True},
        {"max_attempts": 2.5},
        {"base_delay": -1},
        {"max_delay": -0.1},
        {"multiplier": 0.5},
        {"jitter": "decorrelated"},
    ],
)
def test_retry_backoff_rejects_out_of_range_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        load("python/retry-backoff").retry_backoff(**kwargs)


def test_retry_call_gives_up_after_max_attempts_and_reraises_the_last_error() -> None:
    module = load("python/retry-backoff")
    calls: list[int] = []
    slept: list[float] = []

    def always_fails() -> None:
        calls.append(1)
        raise ConnectionError(f"failure {len(calls)}")

    with pytest.raises(ConnectionError, match="failure 3"):
        module.retry_call(always_fails, max_attempts=3, base_delay=1, jitter="none", sleep=slept.append)
    assert len(calls) == 3
    assert slept == [1.0, 2.0]


def test_retry_call_returns_the_first_success_and_reports_each_retry() -> None:
    module = load("python/retry-backoff")
    outcomes: Iterator[TimeoutError | str] = iter([TimeoutError("slow"), TimeoutError("slow"), "done"])
    seen: list[tuple[int, str, float]] = []

    def flaky() -> str:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    result = module.retry_call(
        flaky,
        max_attempts=5,
        base_delay=0.1,
        jitter="none",
        retry_on=(TimeoutError,),
        sleep=lambda _: None,
        on_retry=lambda attempt, exc, delay: seen.append((attempt, str(exc), delay)),
    )
    assert result == "done"
    assert seen == [(1, "slow", 0.1), (2, "slow", 0.2)]


def test_retry_call_does_not_retry_exceptions_outside_retry_on() -> None:
    module = load("python/retry-backoff")
    calls: list[int] = []

    def bad_request() -> None:
        calls.append(1)
        raise ValueError("400")

    with pytest.raises(ValueError):
        module.retry_call(bad_request, retry_on=(ConnectionError,), sleep=lambda _: None)
    assert calls == [1]


# ---------------------------------------------------------------------------------------------
# python/parse-env-config
# ---------------------------------------------------------------------------------------------


def test_parse_env_config_converts_types_and_applies_defaults() -> None:
    parse = load("python/parse-env-config").parse_env_config
    spec = {
        "PORT": {"type": "int", "default": 8080},
        "RATIO": {"type": "float"},
        "DEBUG": {"type": "bool", "default": False},
        "HOSTS": {"type": "list"},
        "NAME": {},
        "MISSING": {},
    }
    environ = {"RATIO": " 0.25 ", "DEBUG": "On", "HOSTS": "a.example, b.example,,", "NAME": "svc"}
    result = parse(environ, spec)
    assert result == {
        "values": {
            "PORT": 8080,
            "RATIO": 0.25,
            "DEBUG": True,
            "HOSTS": ["a.example", "b.example"],
            "NAME": "svc",
            "MISSING": None,
        },
        "errors": [],
        "unknown": [],
    }


def test_parse_env_config_reports_every_error_at_once_matching_the_docs_example() -> None:
    parse = load("python/parse-env-config").parse_env_config
    result = parse(
        {"APP_PORT": "80a", "APP_DEBUG": "yes", "APP_DATABSE_URL": "postgres://x"},
        {"PORT": {"type": "int"}, "DEBUG": {"type": "bool"}, "DATABASE_URL": {"required": True}},
        prefix="APP_",
    )
    assert result == {
        "values": {"DEBUG": True},
        "errors": ["APP_PORT='80a' is not an integer", "APP_DATABASE_URL is required but not set"],
        "unknown": ["APP_DATABSE_URL"],
    }


@pytest.mark.parametrize(
    ("kind", "raw"),
    [("int", "1.5"), ("int", "0x10"), ("float", "nan"), ("float", "inf"), ("bool", "ture"), ("bool", "")],
)
def test_parse_env_config_rejects_values_that_do_not_convert(kind: str, raw: str) -> None:
    parse = load("python/parse-env-config").parse_env_config
    result = parse({"X": raw}, {"X": {"type": kind, "required": True, "allow_empty": True}})
    assert len(result["errors"]) == 1 and "X" not in result["values"]


def test_parse_env_config_never_echoes_secret_values() -> None:
    parse = load("python/parse-env-config").parse_env_config
    result = parse({"API_TOKEN": "s3cr3t-value"}, {"API_TOKEN": {"secret": True, "min": 20}})
    assert result["errors"] == ["API_TOKEN=*** must be at least 20 in length"]
    assert "s3cr3t" not in json.dumps(result["errors"])


def test_parse_env_config_treats_empty_values_as_unset_unless_allowed() -> None:
    parse = load("python/parse-env-config").parse_env_config
    assert parse({"TAG": ""}, {"TAG": {"required": True}})["errors"] == ["TAG is required but not set"]
    assert parse({"TAG": ""}, {"TAG": {"allow_empty": True}})["values"] == {"TAG": ""}


def test_parse_env_config_checks_choices_and_bounds() -> None:
    parse = load("python/parse-env-config").parse_env_config
    spec = {
        "LEVEL": {"choices": ["INFO", "DEBUG"]},
        "PORT": {"type": "int", "min": 1, "max": 65535},
        "HOSTS": {"type": "list", "max": 1},
    }
    result = parse({"LEVEL": "TRACE", "PORT": "70000", "HOSTS": "a,b"}, spec)
    assert result["errors"] == [
        "LEVEL='TRACE' is not one of: INFO, DEBUG",
        "PORT='70000' must be at most 65535",
        "HOSTS='a,b' must be at most 1 in length",
    ]


@pytest.mark.parametrize(
    "spec",
    [{"port": {}}, {"1PORT": {}}, {"PORT": {"type": "dict"}}, {"PORT": {"requred": True}}, {"": {}}],
)
def test_parse_env_config_rejects_a_malformed_spec(spec: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        load("python/parse-env-config").parse_env_config({}, spec)


# ---------------------------------------------------------------------------------------------
# python/slugify
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kwargs", "expected"),
    [
        ("Crème Brûlée: 10 Tips & Tricks!", {}, "creme-brulee-10-tips-tricks"),
        ("Straße in Łódź", {}, "strasse-in-lodz"),
        ("Don't Panic", {}, "dont-panic"),
        ("  --Hello,   World--  ", {}, "hello-world"),
        ("ﬁne Ａrt", {}, "fine-art"),
        ("hello wonderful world", {"max_length": 12}, "hello"),
        ("hello world", {"max_length": 5}, "hello"),
        ("supercalifragilistic", {"max_length": 5}, "super"),
        ("Release Notes v2.1", {"separator": "_"}, "release_notes_v2_1"),
        ("Keep Case", {"lowercase": False}, "Keep-Case"),
        ("Привет мир", {}, ""),
        ("", {}, ""),
    ],
)
def test_slugify_produces_ascii_slugs(text: str, kwargs: dict[str, Any], expected: str) -> None:
    assert load("python/slugify").slugify(text, **kwargs) == expected


def test_slugify_is_idempotent_and_respects_max_length_for_random_text() -> None:
    slugify = load("python/slugify").slugify
    rng = random.Random(0)
    alphabet = "abcXYZ019 -_.,!éßøŁ'’\t"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        limit = rng.randint(1, 30)
        slug = slugify(text, max_length=limit)
        assert len(slug) <= limit
        assert slugify(slug, max_length=limit) == slug
        assert re.fullmatch(r"([a-z0-9]+(-[a-z0-9]+)*)?", slug)


@pytest.mark.parametrize("kwargs", [{"max_length": 0}, {"separator": ""}, {"separator": "x"}])
def test_slugify_rejects_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        load("python/slugify").slugify("text", **kwargs)


def test_unique_slug_appends_the_first_free_number_and_falls_back_for_empty_text() -> None:
    unique_slug = load("python/slugify").unique_slug
    assert unique_slug("Hello, World!", {"hello-world"}) == "hello-world-2"
    assert unique_slug("Hello", {"hello", "hello-2"}) == "hello-3"
    assert unique_slug("😀", set()) == "item"
    assert len(unique_slug("a" * 20, {"a" * 10}, max_length=10)) <= 10


# ---------------------------------------------------------------------------------------------
# git/conventional-commit-lint
# ---------------------------------------------------------------------------------------------


def test_conventional_commit_lint_accepts_and_parses_a_full_message() -> None:
    lint = load("git/conventional-commit-lint").conventional_commit_lint
    message = (
        "feat(parser): support quoted newlines\n\n"
        "Body text explaining why.\n\n"
        "Refs #482\n"
        "BREAKING CHANGE: rows are now\n"
        "  split differently\n"
        "Reviewed-by: Ana\n"
    )
    report = lint(message)
    assert report["valid"] and report["errors"] == [] and report["warnings"] == []
    assert (report["type"], report["scope"], report["description"]) == (
        "feat",
        "parser",
        "support quoted newlines",
    )
    assert report["breaking"] is True
    assert report["footers"] == [
        {"token": "Refs", "value": "482"},
        {"token": "BREAKING CHANGE", "value": "rows are now\n  split differently"},
        {"token": "Reviewed-by", "value": "Ana"},
    ]


def test_conventional_commit_lint_marks_bang_headers_as_breaking() -> None:
    report = load("git/conventional-commit-lint").conventional_commit_lint("refactor(api)!: drop v1")
    assert report["valid"] and report["breaking"]


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ("", "empty"),
        ("# only a comment\n", "empty"),
        ("feat:missing space", "header must look like"),
        ("feat(): empty scope", "header must look like"),
        ("update readme", "header must look like"),
        ("feature: add thing", "not one of"),
        ("Feat: add thing", "must be lowercase"),
        ("fix: trailing period.", "period"),
        ("fix: ", "description is empty"),
        ("fix:  leading space", "whitespace"),
        ("fix: add thing\nno blank line", "blank line"),
        ("fix: " + "x" * 80, "the limit is 72"),
        ("feat: x\n\nBREAKING CHANGE: ", "needs a description"),
    ],
)
def test_conventional_commit_lint_rejects_malformed_messages(message: str, fragment: str) -> None:
    report = load("git/conventional-commit-lint").conventional_commit_lint(message)
    assert report["valid"] is False
    assert any(fragment in error for error in report["errors"]), report["errors"]


def test_conventional_commit_lint_warns_about_capitalised_descriptions_but_allows_acronyms() -> None:
    lint = load("git/conventional-commit-lint").conventional_commit_lint
    assert lint("fix: Added a thing")["warnings"] and lint("fix: Added a thing")["valid"]
    assert lint("fix: API keys are trimmed")["warnings"] == []


def test_conventional_commit_lint_skips_git_comments_and_scissors() -> None:
    message = (
        "fix: real header\n"
        "# Please enter the commit message\n"
        "# ------------------------ >8 ------------------------\n"
        "diff --git a b\n"
    )
    report = load("git/conventional-commit-lint").conventional_commit_lint(message)
    assert report["valid"] and report["footers"] == []


@pytest.mark.parametrize(
    "message",
    ["Merge branch 'main' into feature", 'Revert "feat: add x"', "fixup! feat: add x", "squash! fix: y"],
)
def test_conventional_commit_lint_ignores_messages_generated_by_git(message: str) -> None:
    report = load("git/conventional-commit-lint").conventional_commit_lint(message)
    assert report["valid"] and report["ignored"]


def test_conventional_commit_lint_honours_custom_types_scope_rule_and_length() -> None:
    lint = load("git/conventional-commit-lint").conventional_commit_lint
    assert lint("deps: bump x", allowed_types=["deps"])["valid"]
    assert not lint("feat: x", allowed_types=["deps"])["valid"]
    assert not lint("fix: x", require_scope=True)["valid"]
    assert lint("fix(ui): x", require_scope=True)["valid"]
    assert not lint("fix: twelve chars", max_header_length=10)["valid"]
    with pytest.raises(ValueError):
        lint("fix: x", max_header_length=0)


# ---------------------------------------------------------------------------------------------
# git/semver-bump
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "part", "prerelease_id", "expected"),
    [
        ("1.2.3", "major", "rc", "2.0.0"),
        ("1.2.3", "minor", "rc", "1.3.0"),
        ("1.2.3", "patch", "rc", "1.2.4"),
        ("2.0.0-rc.1", "major", "rc", "2.0.0"),
        ("1.3.0-rc.1", "minor", "rc", "1.3.0"),
        ("1.2.4-rc.1", "patch", "rc", "1.2.4"),
        ("1.2.4-rc.1", "minor", "rc", "1.3.0"),
        ("1.2.3", "prerelease", "rc", "1.2.4-rc.1"),
        ("1.2.4-rc.1", "prerelease", "rc", "1.2.4-rc.2"),
        ("1.2.4-rc.9", "prerelease", "rc", "1.2.4-rc.10"),
        ("1.2.4-beta.3", "prerelease", "rc", "1.2.4-rc.1"),
        ("1.2.4-rc", "prerelease", "rc", "1.2.4-rc.1"),
        ("1.2.3", "premajor", "alpha", "2.0.0-alpha.1"),
        ("1.2.3", "preminor", "beta", "1.3.0-beta.1"),
        ("1.2.3", "prepatch", "rc", "1.2.4-rc.1"),
        ("1.2.4-rc.2", "release", "rc", "1.2.4"),
        ("v1.2.3+build.7", "minor", "rc", "v1.3.0"),
        ("0.9.9", "patch", "rc", "0.9.10"),
    ],
)
def test_semver_bump_follows_the_documented_rules(version: str, part: str, prerelease_id: str, expected: str) -> None:
    assert load("git/semver-bump").semver_bump(version, part, prerelease_id) == expected


@pytest.mark.parametrize(
    ("version", "part", "prerelease_id"),
    [
        ("1.2", "patch", "rc"),
        ("01.2.3", "patch", "rc"),
        ("1.2.3-rc.01", "patch", "rc"),
        ("1.2.3-", "patch", "rc"),
        ("1.2.3", "huge", "rc"),
        ("1.2.3", "prerelease", "01"),
        ("1.2.3", "prerelease", "r.c"),
        ("1.2.4-rc.3", "prerelease", "beta"),
        ("1.2.3", "release", "rc"),
        ("١.٢.٣", "patch", "rc"),
    ],
)
def test_semver_bump_rejects_invalid_or_decreasing_bumps(version: str, part: str, prerelease_id: str) -> None:
    with pytest.raises(ValueError):
        load("git/semver-bump").semver_bump(version, part, prerelease_id)


def test_compare_versions_orders_by_semver_precedence() -> None:
    module = load("git/semver-bump")
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.9.0",
        "1.10.0",
        "2.0.0",
    ]
    shuffled = ordered[::-1]
    assert sorted(shuffled, key=functools.cmp_to_key(module.compare_versions)) == ordered
    assert module.compare_versions("1.0.0+build.1", "v1.0.0+build.2") == 0


# ---------------------------------------------------------------------------------------------
# api/token-bucket
# ---------------------------------------------------------------------------------------------


def test_token_bucket_simulation_matches_the_docs_example() -> None:
    result = load("api/token-bucket").token_bucket(2, 1, [0, 0, 0, 0.5, 1.0])
    assert [d["allowed"] for d in result["decisions"]] == [True, True, False, False, True]
    assert [d["retry_after"] for d in result["decisions"]] == [0.0, 0.0, 1.0, 0.5, 0.0]
    assert (result["allowed"], result["rejected"]) == (3, 2)


def test_token_bucket_allows_a_burst_then_the_refill_rate() -> None:
    times = [0.0] * 10 + [float(t) for t in range(1, 11)]
    result = load("api/token-bucket").token_bucket(capacity=10, refill_rate=1, request_times=times)
    assert result["allowed"] == 20 and result["rejected"] == 0
    result = load("api/token-bucket").token_bucket(capacity=10, refill_rate=1, request_times=[0.0] * 11)
    assert result["rejected"] == 1


def test_token_bucket_charges_cost_and_never_exceeds_capacity() -> None:
    module = load("api/token-bucket")
    now = [0.0]
    bucket = module.TokenBucket(capacity=5, refill_rate=2, clock=lambda: now[0])
    assert bucket.try_acquire(3) and not bucket.try_acquire(3)
    assert bucket.retry_after(3) == pytest.approx(0.5)
    now[0] = 100.0
    assert bucket.tokens == 5.0
    now[0] = 50.0  # a clock going backwards must not add tokens
    assert bucket.tokens == 5.0


def test_token_bucket_is_safe_under_concurrent_acquisition() -> None:
    bucket = load("api/token-bucket").TokenBucket(capacity=100, refill_rate=1e-9, clock=lambda: 0.0)
    granted: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(50):
            ok = bucket.try_acquire()
            with lock:
                granted.append(ok)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=deadline())
    assert sum(granted) == 100 and len(granted) == 400


@pytest.mark.parametrize(
    "kwargs",
    [
        {"capacity": 0, "refill_rate": 1, "request_times": [0]},
        {"capacity": 1, "refill_rate": -1, "request_times": [0]},
        {"capacity": float("inf"), "refill_rate": 1, "request_times": [0]},
        {"capacity": 1, "refill_rate": 1, "request_times": [0], "cost": 2},
        {"capacity": 1, "refill_rate": 1, "request_times": [0], "cost": 0},
        {"capacity": 1, "refill_rate": 1, "request_times": [2, 1]},
    ],
)
def test_token_bucket_rejects_impossible_configurations(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        load("api/token-bucket").token_bucket(**kwargs)


# ---------------------------------------------------------------------------------------------
# api/validate-json-input
# ---------------------------------------------------------------------------------------------


def test_validate_json_input_reports_all_errors_with_json_pointers() -> None:
    validate = load("api/validate-json-input").validate_json_input
    schema = {
        "type": "object",
        "properties": {
            "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+$", "maxLength": 254},
            "age": {"type": "integer", "minimum": 13},
            "roles": {"type": "array", "items": {"enum": ["admin", "viewer"]}, "uniqueItems": True},
            "a/b~c": {"const": 1},
        },
        "required": ["email", "name"],
        "additionalProperties": False,
    }
    data = {"email": "ana@", "age": 12.5, "roles": ["admin", "root", "admin"], "role": "x", "a/b~c": True}
    assert validate(data, schema)["errors"] == [
        {"path": "/name", "message": "is required"},
        {"path": "/email", "message": "must match pattern ^[^@\\s]+@[^@\\s]+$"},
        {"path": "/age", "message": "expected integer, got number"},
        {"path": "/roles", "message": "items must be unique"},
        {"path": "/roles/1", "message": 'must be one of ["admin", "viewer"]'},
        {"path": "/role", "message": "is not an allowed property"},
        {"path": "/a~1b~0c", "message": "must equal 1"},
    ]


@pytest.mark.parametrize(
    ("value", "kind", "ok"),
    [
        (1, "integer", True),
        (1.0, "integer", True),
        (1.5, "integer", False),
        (True, "integer", False),
        (True, "number", False),
        (False, "boolean", True),
        (None, "null", True),
        ([], "object", False),
        ({}, "object", True),
        ("1", "number", False),
    ],
)
def test_validate_json_input_uses_json_type_semantics(value: Any, kind: str, ok: bool) -> None:
    assert load("api/validate-json-input").validate_json_input(value, {"type": kind})["valid"] is ok


def test_validate_json_input_compares_enum_and_unique_items_like_json() -> None:
    validate = load("api/validate-json-input").validate_json_input
    assert validate(1.0, {"enum": [1]})["valid"]
    assert not validate(True, {"enum": [1]})["valid"]
    assert not validate([1, 1.0], {"uniqueItems": True})["valid"]
    assert validate([1, True], {"uniqueItems": True})["valid"]


def test_validate_json_input_patterns_are_unanchored_and_numbers_are_bounded() -> None:
    validate = load("api/validate-json-input").validate_json_input
    assert validate("abc1", {"pattern": "[0-9]+"})["valid"]
    assert not validate("abc1", {"pattern": "^[0-9]+$"})["valid"]
    assert validate(0.3, {"multipleOf": 0.1})["valid"]
    assert not validate(0.35, {"multipleOf": 0.1})["valid"]
    assert not validate(5, {"exclusiveMaximum": 5})["valid"]
    assert validate("héllo", {"maxLength": 5})["valid"]


def test_validate_json_input_supports_boolean_and_nested_additional_schemas() -> None:
    validate = load("api/validate-json-input").validate_json_input
    schema = {"type": "object", "additionalProperties": {"type": "string"}, "properties": {"x": False}}
    result = validate({"a": "ok", "b": 2, "x": 1}, schema)
    assert result["errors"] == [
        {"path": "/b", "message": "expected string, got number"},
        {"path": "/x", "message": "no value is allowed here"},
    ]


@pytest.mark.parametrize(
    "schema",
    [
        {"oneOf": [{"type": "string"}]},
        {"$ref": "#/defs/x"},
        {"type": "text"},
        {"pattern": "("},
        {"properties": []},
        {"required": "name"},
        {"multipleOf": 0},
        {"items": [{"type": "string"}]},
        {"properties": {"a": {"anyOf": []}}},
    ],
)
def test_validate_json_input_refuses_unsupported_or_malformed_schemas(schema: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        load("api/validate-json-input").validate_json_input({}, schema)


# ---------------------------------------------------------------------------------------------
# database/keyset-pagination
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def posts_db() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    conn.execute("CREATE TABLE posts (id INTEGER PRIMARY KEY, score INTEGER NOT NULL, title TEXT NOT NULL)")
    rng = random.Random(3)
    conn.executemany("INSERT INTO posts VALUES (?, ?, ?)", [(i, rng.randint(1, 4), f"post {i}") for i in range(1, 48)])
    yield conn
    conn.close()


@pytest.mark.parametrize("order_by", [["id"], ["score", "id"], ["-score", "-id"], ["-score", "id"], ["score", "-id"]])
def test_keyset_pagination_walks_every_row_exactly_once_in_order(
    posts_db: sqlite3.Connection, order_by: list[str]
) -> None:
    module = load("database/keyset-pagination")
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        query = module.keyset_pagination("posts", ["id", "score", "title"], order_by, 10, cursor)
        rows = [dict(row) for row in posts_db.execute(query["sql"], query["params"])]
        page = module.paginate_rows(rows, order_by, 10)
        seen.extend(row["id"] for row in page["items"])
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    rows = [dict(row) for row in posts_db.execute("SELECT * FROM posts")]

    def key(row: dict[str, Any]) -> tuple[int, ...]:
        return tuple(-row[c[1:]] if c.startswith("-") else row[c] for c in order_by)

    assert seen == [row["id"] for row in sorted(rows, key=key)]
    assert pages == 5


def test_keyset_pagination_builds_the_documented_sql() -> None:
    module = load("database/keyset-pagination")
    cursor = module.encode_cursor(["2026-11-19T08:00:00Z", 4211])
    query = module.keyset_pagination("orders", ["id", "created_at", "total_cents"], ["-created_at", "-id"], 50, cursor)
    assert query == {
        "sql": 'SELECT "id", "created_at", "total_cents" FROM "orders" WHERE ("created_at", "id") < (?, ?) '
        'ORDER BY "created_at" DESC, "id" DESC LIMIT ?',
        "params": ["2026-11-19T08:00:00Z", 4211, 51],
    }
    mixed = module.keyset_pagination("s.posts", ["id", "score"], ["-score", "id"], 10, "WzMsN10", "format")
    assert mixed["sql"] == (
        'SELECT "id", "score" FROM "s"."posts" WHERE (("score" < %s) OR ("score" = %s AND "id" > %s)) '
        'ORDER BY "score" DESC, "id" ASC LIMIT %s'
    )
    assert mixed["params"] == [3, 3, 7, 11]


def test_keyset_cursors_round_trip_and_reject_tampering() -> None:
    module = load("database/keyset-pagination")
    token = module.encode_cursor(["naïve", 3, 2.5])
    assert "=" not in token and module.decode_cursor(token, 3) == ["naïve", 3, 2.5]
    for bad in [
        "!!!",
        "e30",
        module.encode_cursor([1]),
        module.encode_cursor([None, 1]),
        module.encode_cursor([True, 1]),
    ]:
        with pytest.raises(ValueError):
            module.decode_cursor(bad, 2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"table": "posts; DROP TABLE posts"},
        {"columns": ["id", 'score" --']},
        {"order_by": ["title"]},
        {"order_by": []},
        {"page_size": 0},
        {"page_size": 1001},
        {"page_size": True},
        {"paramstyle": "named"},
        {"cursor": "not-a-cursor"},
    ],
)
def test_keyset_pagination_rejects_unsafe_identifiers_and_bad_options(kwargs: dict[str, Any]) -> None:
    base: dict[str, Any] = {
        "table": "posts",
        "columns": ["id", "score"],
        "order_by": ["score", "id"],
        "page_size": 10,
    }
    with pytest.raises(ValueError):
        load("database/keyset-pagination").keyset_pagination(**{**base, **kwargs})


def test_paginate_rows_without_an_extra_row_has_no_next_cursor() -> None:
    paginate_rows = load("database/keyset-pagination").paginate_rows
    rows = [{"id": 1}, {"id": 2}]
    assert paginate_rows(rows, ["id"], 2) == {"items": rows, "next_cursor": None}
    assert paginate_rows([], ["id"], 2) == {"items": [], "next_cursor": None}


# ---------------------------------------------------------------------------------------------
# security/redact-secrets
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        ("db postgres://app:s3cr3t@db/shop", "db postgres://app:[REDACTED]@db/shop", "url_credentials"),
        ("password=hunter2 user=bob", "password=[REDACTED] user=bob", "assignment"),
        ('{"api_key": "abc123", "n": 1}', '{"api_key": "[REDACTED]", "n": 1}', "assignment"),
        ("GET /cb?access_token=xyz987&state=2", "GET /cb?access_token=[REDACTED]&state=2", "assignment"),
        (
            "export AWS_SECRET_ACCESS_KEY='wJalrXUtnFEMI'",
            "export AWS_SECRET_ACCESS_KEY='[REDACTED]'",
            "assignment",
        ),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED]", "authorization"),
        (
            '-H "Authorization: Bearer abcdefgh12345"',
            '-H "Authorization: Bearer [REDACTED]"',
            "authorization",
        ),
        ("key AKIAIOSFODNN7EXAMPLE used", "key [REDACTED] used", "aws_access_key_id"),
        ("t ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 x", "t [REDACTED] x", "github_token"),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED]", "stripe_key"),
        ("xoxb-1234567890-abcdefghij", "[REDACTED]", "slack_token"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
            "[REDACTED]",
            "private_key",
        ),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl end", "jwt [REDACTED] end", "jwt"),
    ],
)
def test_redact_secrets_masks_known_secret_shapes(text: str, expected: str, kind: str) -> None:
    result = load("security/redact-secrets").redact_secrets(text)
    assert result == {"text": expected, "count": 1, "kinds": [kind]}


@pytest.mark.parametrize(
    "text",
    [
        "200 OK in 12ms",
        "Invalid token provided",
        "Authorization failed for user bob",
        "see https://example.com/a",
    ],
)
def test_redact_secrets_leaves_ordinary_text_alone(text: str) -> None:
    assert load("security/redact-secrets").redact_secrets(text) == {"text": text, "count": 0, "kinds": []}


def test_redact_secrets_is_idempotent_and_supports_custom_patterns_and_masks() -> None:
    redact = load("security/redact-secrets").redact_secrets
    once = redact("password=hunter2 ssn 123-45-6789", mask="***", extra_patterns=[r"\b\d{3}-\d{2}-\d{4}\b"])
    assert once == {"text": "password=*** ssn ***", "count": 2, "kinds": ["assignment", "custom"]}
    assert redact(once["text"], mask="***")["count"] == 0


@pytest.mark.parametrize("kwargs", [{"mask": ""}, {"extra_patterns": ["("]}, {"extra_patterns": ["x*"]}])
def test_redact_secrets_rejects_bad_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        load("security/redact-secrets").redact_secrets("text", **kwargs)


def test_redacting_filter_scrubs_formatted_log_messages() -> None:
    module = load("security/redact-secrets")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(module.RedactingFilter())
    logger = logging.getLogger("test_bundled_patterns.redaction")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        logger.info("calling %s", "https://api.example.com/v1?api_key=abc123xyz")
        logger.info("plain %d", 5)
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == "calling https://api.example.com/v1?api_key=[REDACTED]\nplain 5\n"


# ---------------------------------------------------------------------------------------------
# security/safe-path-join
# ---------------------------------------------------------------------------------------------


def test_safe_path_join_resolves_paths_inside_the_base(tmp_path: Path) -> None:
    safe_path_join = load("security/safe-path-join").safe_path_join
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "q3.pdf").write_bytes(b"%PDF")
    base = str(tmp_path)
    root = tmp_path.resolve()
    assert safe_path_join(base, "reports/q3.pdf", must_exist=True) == str(root / "reports" / "q3.pdf")
    assert safe_path_join(base, "reports/../q3.pdf") == str(root / "q3.pdf")
    assert safe_path_join(base, "") == str(root)
    assert safe_path_join(base, "new/dir/file.txt") == str(root / "new" / "dir" / "file.txt")


@pytest.mark.parametrize("relative", ["../etc/passwd", "a/../../x", "..", "reports/../../sibling"])
def test_safe_path_join_rejects_traversal_outside_the_base(tmp_path: Path, relative: str) -> None:
    module = load("security/safe-path-join")
    with pytest.raises(module.PathEscapeError):
        module.safe_path_join(str(tmp_path / "base"), relative)


@pytest.mark.parametrize(
    "relative", ["/etc/passwd", "C:\\Windows", "C:relative", "\\\\server\\share\\x", "\\rooted", "a\x00b"]
)
def test_safe_path_join_rejects_absolute_drive_unc_and_nul_paths(tmp_path: Path, relative: str) -> None:
    with pytest.raises(ValueError):
        load("security/safe-path-join").safe_path_join(str(tmp_path), relative)


def test_safe_path_join_catches_symlink_escapes_and_sibling_prefixes(tmp_path: Path) -> None:
    module = load("security/safe-path-join")
    base = tmp_path / "data"
    outside = tmp_path / "data-evil"
    base.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("x", encoding="utf-8")
    (base / "inner").mkdir()
    try:
        (base / "link").symlink_to(outside, target_is_directory=True)
        (base / "ok-link").symlink_to(base / "inner", target_is_directory=True)
    except (OSError, NotImplementedError):
        pytest.skip("symlinks are not available")
    with pytest.raises(module.PathEscapeError):
        module.safe_path_join(str(base), "link/secret.txt")
    with pytest.raises(module.PathEscapeError):
        module.safe_path_join(str(base), "../data-evil/secret.txt")
    assert module.safe_path_join(str(base), "ok-link") == str((base / "inner").resolve())


def test_safe_path_join_must_exist_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load("security/safe-path-join").safe_path_join(str(tmp_path), "missing.txt", must_exist=True)
    with pytest.raises(ValueError):
        load("security/safe-path-join").safe_path_join("", "x")


# ---------------------------------------------------------------------------------------------
# security/webhook-hmac-verify
# ---------------------------------------------------------------------------------------------

BODY = '{"id":"evt_1","type":"invoice.paid"}'
DOC_HEADER = "t=1763630000,v1=db1535596f97fb8a5397ad3f5d2d1ffb7c1db0713ea18a54352372370e4f184b"


def test_webhook_signature_round_trips_and_matches_the_documented_header() -> None:
    module = load("security/webhook-hmac-verify")
    assert module.sign_webhook("whsec_test", BODY, 1763630000) == DOC_HEADER
    assert module.sign_webhook("whsec_test", BODY.encode(), 1763630000) == DOC_HEADER
    result = module.webhook_hmac_verify(["whsec_test"], BODY, DOC_HEADER, now=1763630100)
    assert result == {"valid": True, "reason": "ok", "timestamp": 1763630000}


@pytest.mark.parametrize(
    ("secrets", "payload", "header", "now", "reason"),
    [
        (["whsec_test"], BODY + " ", DOC_HEADER, 1763630000, "signature_mismatch"),
        (["other"], BODY, DOC_HEADER, 1763630000, "signature_mismatch"),
        (["whsec_test"], BODY, DOC_HEADER, 1763630000 + 301, "timestamp_out_of_tolerance"),
        (["whsec_test"], BODY, DOC_HEADER, 1763630000 - 301, "timestamp_out_of_tolerance"),
        (["whsec_test"], BODY, "", 0, "malformed_header"),
        (["whsec_test"], BODY, "t=abc,v1=00", 0, "malformed_header"),
        (["whsec_test"], BODY, "t=1763630000", 1763630000, "malformed_header"),
        (["whsec_test"], BODY, "v1=" + "0" * 64, 1763630000, "malformed_header"),
        (["whsec_test"], BODY, "t=1,t=2,v1=" + "0" * 64, 1, "malformed_header"),
        (["whsec_test"], BODY, DOC_HEADER.replace("v1=", "v1=é"), 1763630000, "signature_mismatch"),
    ],
)
def test_webhook_verification_rejects_forged_stale_and_malformed_deliveries(
    secrets: list[str], payload: str, header: str, now: int, reason: str
) -> None:
    result = load("security/webhook-hmac-verify").webhook_hmac_verify(secrets, payload, header, now=now)
    assert result["valid"] is False and result["reason"] == reason


def test_webhook_verification_supports_rotation_on_both_sides_and_uppercase_hex() -> None:
    module = load("security/webhook-hmac-verify")
    signature = DOC_HEADER.split("v1=")[1]
    two_signatures = f"t=1763630000,v1={'0' * 64},v1={signature.upper()}"
    assert module.webhook_hmac_verify(["whsec_test"], BODY, two_signatures, now=1763630000)["valid"]
    assert module.webhook_hmac_verify(["whsec_new", "whsec_test"], BODY, DOC_HEADER, now=1763630000)["valid"]


@pytest.mark.parametrize("kwargs", [{"secrets": []}, {"secrets": [""]}, {"tolerance_seconds": -1}])
def test_webhook_verification_rejects_bad_configuration(kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"secrets": ["s"], "payload": "{}", "signature_header": DOC_HEADER, **kwargs}
    with pytest.raises(ValueError):
        load("security/webhook-hmac-verify").webhook_hmac_verify(**arguments)


def test_github_signature_verification_matches_the_published_test_vector() -> None:
    verify = load("security/webhook-hmac-verify").verify_github_signature
    header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert verify("It's a Secret to Everybody", b"Hello, World!", header)
    assert not verify("It's a Secret to Everybody", b"Hello, World?", header)
    assert not verify("It's a Secret to Everybody", b"Hello, World!", "sha1=abc")


# ---------------------------------------------------------------------------------------------
# Bundled scripts in Agent Skills folders, run for real
# ---------------------------------------------------------------------------------------------

BISECT = PATTERNS / "git" / "git-bisect-workflow" / "scripts" / "bisect-step.sh"
CHECK_MIGRATION = PATTERNS / "database" / "zero-downtime-migrations" / "scripts" / "check_migration.py"
LINT_DOCKERFILE = PATTERNS / "devops" / "dockerfile-hardening" / "scripts" / "lint_dockerfile.py"


@pytest.mark.parametrize(
    ("args", "code", "expected"),
    [
        (["true"], 0, {"verdict": "good", "exit_code": 0, "build_status": None, "test_status": 0}),
        (["exit 3"], 1, {"verdict": "bad", "exit_code": 1, "build_status": None, "test_status": 3}),
        (["exit 125"], 125, {"verdict": "skip", "exit_code": 125, "build_status": None, "test_status": 125}),
        (["kill -9 $$"], 1, {"verdict": "bad", "exit_code": 1, "build_status": None, "test_status": 137}),
        (
            ["true", "exit 2"],
            125,
            {"verdict": "skip", "exit_code": 125, "build_status": 2, "test_status": None},
        ),
        (
            ["echo tested", "echo built"],
            0,
            {"verdict": "good", "exit_code": 0, "build_status": 0, "test_status": 0},
        ),
        ([], 255, {"verdict": "abort", "exit_code": 255, "build_status": None, "test_status": None}),
        ([""], 255, {"verdict": "abort", "exit_code": 255, "build_status": None, "test_status": None}),
    ],
)
def test_bisect_step_maps_build_and_test_results_to_bisect_exit_codes(
    args: list[str], code: int, expected: dict[str, Any]
) -> None:
    result = subprocess.run(
        ["sh", str(BISECT), *args], input="", capture_output=True, text=True, timeout=deadline(), check=False
    )
    assert result.returncode == code
    assert json.loads(result.stdout) == expected
    assert "tested" not in result.stdout and "built" not in result.stdout


def test_bisect_step_runs_directly_through_its_shebang() -> None:
    result = subprocess.run([str(BISECT), "exit 0"], capture_output=True, text=True, timeout=deadline(), check=False)
    assert result.returncode == 0 and json.loads(result.stdout)["verdict"] == "good"


def run_json_script(script: Path, payload: Any) -> tuple[int, Any]:
    result = subprocess.run(
        [sys.executable, str(script)],
        input=payload if isinstance(payload, str) else json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=deadline(),
        check=False,
    )
    return result.returncode, json.loads(result.stdout)


def test_check_migration_flags_locking_and_non_idempotent_statements() -> None:
    sql = (
        "-- migration 42; adds status\n"
        "BEGIN;\n"
        "CREATE TABLE audit (id bigint);\n"
        "ALTER TABLE orders ADD COLUMN status text NOT NULL;\n"
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_status ON orders (status);\n"
        "ALTER TABLE orders ADD COLUMN IF NOT EXISTS note text DEFAULT 'a;b';\n"
        "COMMIT;\n"
        "CREATE OR REPLACE FUNCTION f() RETURNS int AS $$ select 1; $$ LANGUAGE sql;\n"
        "UPDATE orders SET status = 'new';\n"
        "ALTER TABLE orders ALTER COLUMN note DROP DEFAULT, DROP COLUMN legacy;\n"
        "ALTER TABLE orders ADD CONSTRAINT fk FOREIGN KEY (user_id) REFERENCES users (id);\n"
        "CREATE INDEX orders_created ON orders (created_at);\n"
        "ALTER TABLE orders ADD COLUMN token uuid DEFAULT gen_random_uuid();\n"
        "ALTER TABLE orders RENAME COLUMN a TO b\n"
    )
    code, report = run_json_script(CHECK_MIGRATION, {"sql": sql})
    assert code == 0
    assert report["statements"] == 13 and report["passed"] is False
    found = {(finding["line"], finding["rule"]) for finding in report["findings"]}
    assert found == {
        (3, "M001"),
        (4, "M001"),
        (4, "M004"),
        (5, "M003"),
        (9, "M011"),
        (10, "M001"),
        (10, "M010"),
        (11, "M008"),
        (12, "M002"),
        (12, "M001"),
        (13, "M001"),
        (13, "M005"),
        (14, "M009"),
        (1, "M012"),
    }


def test_check_migration_passes_the_expand_phase_from_the_skill() -> None:
    sql = (
        "SET lock_timeout = '5s';\n"
        "ALTER TABLE orders ADD COLUMN IF NOT EXISTS status text;\n"
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_status_idx ON orders (status);\n"
        "ALTER TABLE orders ADD CONSTRAINT orders_user_fk\n"
        "    FOREIGN KEY (user_id) REFERENCES users (id) NOT VALID;\n"
        "ALTER TABLE orders VALIDATE CONSTRAINT orders_user_fk;\n"
        "UPDATE orders SET status = 'legacy'\n"
        "    WHERE id IN (SELECT id FROM orders WHERE status IS NULL LIMIT 5000);\n"
    )
    code, report = run_json_script(CHECK_MIGRATION, {"sql": sql})
    assert (code, report) == (0, {"statements": 6, "passed": True, "findings": []})


@pytest.mark.parametrize("payload", ["not json", "[]", {"sql": 3}, {"query": "SELECT 1"}])
def test_check_migration_rejects_bad_input_with_a_json_error(payload: Any) -> None:
    code, report = run_json_script(CHECK_MIGRATION, payload)
    assert code == 2 and "error" in report


def test_lint_dockerfile_flags_root_secrets_unpinned_images_and_pipe_to_shell() -> None:
    dockerfile = (
        "# syntax=docker/dockerfile:1\n"
        "FROM --platform=$BUILDPLATFORM python:3.12-slim AS build\n"
        "ARG GITHUB_TOKEN\n"
        "RUN apt-get install -y gcc \\\n"
        "    && pip install -r requirements.txt\n"
        "FROM python\n"
        "ENV APP_MODE=token LOG_LEVEL=info\n"
        "ENV DB_PASSWORD hunter2\n"
        "ADD . /app\n"
        "RUN curl -fsSL https://example.com/install.sh | sh\n"
        "COPY --from=build /app /app\n"
        'CMD ["python", "app.py"]\n'
    )
    code, report = run_json_script(LINT_DOCKERFILE, {"dockerfile": dockerfile})
    assert code == 0 and report["passed"] is False and report["stages"] == 2
    found = [(finding["line"], finding["rule"], finding["severity"]) for finding in report["findings"]]
    assert found == [
        (1, "DH011", "info"),
        (2, "DH002", "info"),
        (3, "DH004", "error"),
        (4, "DH006", "warning"),
        (4, "DH006", "warning"),
        (4, "DH006", "info"),
        (4, "DH007", "info"),
        (6, "DH001", "warning"),
        (6, "DH010", "error"),
        (8, "DH004", "error"),
        (9, "DH003", "warning"),
        (10, "DH005", "warning"),
    ]


def test_lint_dockerfile_accepts_the_bundled_template() -> None:
    template = (PATTERNS / "devops" / "dockerfile-hardening" / "assets" / "Dockerfile.python").read_text(
        encoding="utf-8"
    )
    code, report = run_json_script(LINT_DOCKERFILE, {"dockerfile": template})
    assert (code, report) == (0, {"passed": True, "stages": 2, "findings": []})


def test_lint_dockerfile_requires_a_non_root_user_in_the_final_stage_only() -> None:
    dockerfile = "FROM alpine:3.20 AS a\nUSER app\nFROM alpine:3.20\nUSER 0\nHEALTHCHECK NONE\n"
    code, report = run_json_script(LINT_DOCKERFILE, {"dockerfile": dockerfile})
    assert code == 0
    assert [(f["line"], f["rule"]) for f in report["findings"] if f["severity"] == "error"] == [(4, "DH010")]
    code, report = run_json_script(LINT_DOCKERFILE, {"dockerfile": ""})
    assert [f["rule"] for f in report["findings"]] == ["DH000"]


@pytest.mark.parametrize("payload", ["{", {"dockerfile": None}, ["FROM x"]])
def test_lint_dockerfile_rejects_bad_input_with_a_json_error(payload: Any) -> None:
    code, report = run_json_script(LINT_DOCKERFILE, payload)
    assert code == 2 and "error" in report
