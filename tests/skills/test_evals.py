"""Trigger evals (issue 34): written examples through the agent's search, skills their own description does
not find, colliding pairs; `skillshelf eval` (text, JSON, JUnit, threshold), `check --findability`, `stats`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.skill.examples import parse_eval_file, parse_frontmatter_examples
from tests.conftest import agent_skill, write


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def eval_json(root: Path, *options: str) -> tuple[int, dict[str, Any]]:
    code, output = run("eval", "--library", str(root), "--json", *options)
    return code, json.loads(output)


def unreachable_library(root: Path) -> Path:
    """`ops/zz-tool` says only "Deploy helper."; six skills named deploy-helper-N say it louder, so its own
    description ranks it 7th."""
    agent_skill(root, "ops", "zz-tool", "name: zz-tool\ndescription: Deploy helper.")
    for n in range(6):
        agent_skill(
            root,
            "ops",
            f"deploy-helper-{n}",
            f"name: deploy-helper-{n}\ndescription: Deploy helper {n} for deploy work.",
            "# Deploy helper\n\nDeploy helper deploy.\n",
        )
    return root


def colliding_library(root: Path) -> Path:
    """release-writer wins changelog-helper's own description (its name holds "release"), and changelog-helper
    comes second on release-writer's: each contests the other's queries."""
    agent_skill(
        root, "docs", "changelog-helper", "name: changelog-helper\ndescription: Write release notes for a project."
    )
    agent_skill(
        root,
        "docs",
        "release-writer",
        "name: release-writer\ndescription: Write release notes for a project from merged pull requests.",
    )
    agent_skill(
        root, "db", "postgres-index", "name: postgres-index\ndescription: Choose an index for a slow postgres query."
    )
    for n in range(4):  # unrelated skills: the words above are rare in the library, as in a real one
        agent_skill(root, "ops", f"deploy-helper-{n}", f"name: deploy-helper-{n}\ndescription: Deploy helper {n}.")
    return root


def test_a_skill_its_own_description_does_not_find_is_reported_by_eval_check_and_stats(tmp_path: Path) -> None:
    root = unreachable_library(tmp_path / "library")
    code, report = eval_json(root, "--threshold", "0")
    assert code == 0
    findability = report["findability"]
    assert isinstance(findability, dict)
    assert findability["checked"] == 7
    assert findability["unreachable"] == [{"id": "ops/zz-tool", "rank": 7, "winner": "ops/deploy-helper-0"}]

    code, output = run("check", "--findability", "--json", str(root))
    found = [f for f in json.loads(output)["findings"] if f["code"] == "unreachable"]
    assert [f["path"] for f in found] == ["ops/zz-tool/SKILL.md"]
    assert "not in the top 5 for its own description (rank 7" in found[0]["message"]
    code, output = run("check", "--json", str(root))  # without the flag: no search, no such finding
    assert "unreachable" not in {f["code"] for f in json.loads(output)["findings"]}

    code, output = run("stats", "--library", str(root), "--json")
    stats = json.loads(output)["findability"]
    assert [u["id"] for u in stats["unreachable"]] == ["ops/zz-tool"]


def test_two_skills_that_win_each_others_queries_are_a_collision_with_the_words_that_tell_them_apart(
    tmp_path: Path,
) -> None:
    root = colliding_library(tmp_path / "library")
    code, report = eval_json(root, "--threshold", "0")
    assert code == 0
    findability = report["findability"]
    assert isinstance(findability, dict)
    (collision,) = findability["collisions"]
    assert collision["skills"] == ["docs/changelog-helper", "docs/release-writer"]
    assert collision["sharedWords"] == ["write", "release", "notes", "project"]
    assert collision["onlyFirst"] == ["changelog", "helper"]
    assert collision["onlySecond"] == ["writer", "merged", "pull", "requests"]

    code, output = run("check", "--findability", str(root))
    assert "docs/changelog-helper and docs/release-writer win each other's queries" in output
    assert "[search-collision]" in output
    code, output = run("eval", "--library", str(root), "--threshold", "0")
    assert "collision: docs/changelog-helper <> docs/release-writer" in output


def examples_library(root: Path) -> Path:
    agent_skill(
        root,
        "db",
        "postgres-index",
        """
        name: postgres-index
        description: Choose an index for a slow postgres query.
        evals:
          should:
            - which index speeds up my slow postgres query
            - write release notes
          should_not:
            - choose an index for a slow postgres query
        """,
    )
    agent_skill(
        root, "docs", "release-writer", "name: release-writer\ndescription: Write release notes from pull requests."
    )
    examples = [
        {"query": "release notes from the merged pull requests", "should_trigger": True},
        {"query": "postgres query is slow", "should_trigger": False},
    ]
    write(root / "docs" / "release-writer" / "evals" / "eval_queries.json", json.dumps(examples))
    return root


def test_written_examples_report_each_rank_hit_at_1_and_5_wrong_picks_and_the_winner(tmp_path: Path) -> None:
    root = examples_library(tmp_path / "library")
    code, report = eval_json(root, "--threshold", "0")
    assert code == 0
    skills = {s["id"]: s for s in report["skills"]}
    index = skills["db/postgres-index"]
    ranks = {q["query"]: (q.get("rank"), q.get("winner"), q["passed"]) for q in index["queries"]}
    assert ranks["which index speeds up my slow postgres query"] == (1, None, True)
    assert ranks["write release notes"] == (None, "docs/release-writer", False)  # lost, and to whom
    assert ranks["choose an index for a slow postgres query"] == (1, None, False)  # should not, picked anyway
    assert index["hitAt1"] == 0.5 and index["hitAt5"] == 0.5
    assert index["pickedWrongly"] == ["choose an index for a slow postgres query"]
    writer = skills["docs/release-writer"]
    assert writer["hitAt1"] == 1.0 and writer["pickedWrongly"] == []
    assert (report["examples"], report["passed"]) == (5, 3)
    assert report["score"] == 0.6


def test_eval_exits_1_below_the_threshold_and_writes_junit_with_a_testcase_per_query(tmp_path: Path) -> None:
    root = examples_library(tmp_path / "library")
    junit = tmp_path / "evals.xml"
    code, output = run("eval", "--library", str(root), "--junit", str(junit), "--threshold", "0.9")
    assert code == 1
    assert "3/5 examples passed" in output and "below threshold 0.90" in output
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == 5 + 2  # every written example, then each skill's own description
    assert int(suite.get("tests", "0")) == 7 and int(suite.get("failures", "0")) == 2
    failed = {case.get("name") for case in cases if case.find("failure") is not None}
    assert failed == {"should: write release notes", "should not: choose an index for a slow postgres query"}
    code, _output = run("eval", "--library", str(root), "--threshold", "0.6")
    assert code == 0


def test_the_threshold_is_a_setting(tmp_path: Path) -> None:
    root = examples_library(tmp_path / "library")
    config = write(tmp_path / "config.toml", "eval_threshold = 0.9\n")
    result = CliRunner().invoke(cli, ["--config", str(config), "eval", "--library", str(root)])
    assert result.exit_code == 1, result.output


def test_a_view_evaluates_only_what_its_agent_sees_with_its_pinned_filters(tmp_path: Path) -> None:
    root = colliding_library(tmp_path / "library")
    config = write(
        tmp_path / "config.toml",
        '[views.docs]\nextends = "agent"\nskills = [{include = "docs/*"}]\n'
        '[views.db]\nextends = "agent"\n[views.db.overrides.searchPatterns]\npinned = {category = "db"}\n',
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "eval", "-l", str(root), "--json", "--view", "docs"])
    assert json.loads(result.output)["findability"]["checked"] == 2  # the docs skills alone
    result = CliRunner().invoke(cli, ["--config", str(config), "eval", "-l", str(root), "--json", "--view", "db"])
    unreachable = {u["id"] for u in json.loads(result.output)["findability"]["unreachable"]}
    assert {"docs/changelog-helper", "docs/release-writer"} <= unreachable  # the pinned category hides them
    assert "db/postgres-index" not in unreachable
    result = CliRunner().invoke(cli, ["eval", "-l", str(root), "--view", "nosuch"])
    assert result.exit_code == 2 and "no view 'nosuch'" in result.output


def test_malformed_examples_are_named_where_they_are_written(tmp_path: Path) -> None:
    root = tmp_path / "library"
    agent_skill(
        root, "db", "bad-front", "name: bad-front\ndescription: Tune postgres.\nevals:\n  should: tune it\n  maybe: []"
    )
    agent_skill(root, "db", "bad-file", "name: bad-file\ndescription: Vacuum postgres.")
    write(root / "db" / "bad-file" / "evals" / "eval_queries.json", '[{"query": "vacuum"}, "x"')
    _code, report = eval_json(root, "--threshold", "0")
    problems = {s["id"]: s["problems"] for s in report["skills"]}
    assert problems["db/bad-front"] == [
        "frontmatter `evals` has an unknown key 'maybe'; use `should` and `should_not`",
        "frontmatter `evals.should` must be a list of non-empty strings",
    ]
    assert problems["db/bad-file"][0].startswith("evals/eval_queries.json is not valid JSON")
    _code, output = run("check", "--json", str(root))
    invalid = [f for f in json.loads(output)["findings"] if f["code"] == "evals-invalid"]
    assert [f["path"] for f in invalid] == ["db/bad-front/SKILL.md", "db/bad-front/SKILL.md"]


def test_both_shapes_of_the_agent_skills_eval_file_are_read() -> None:
    listed, problems = parse_eval_file('[{"query": "a", "should_trigger": true}]')
    wrapped, more = parse_eval_file('{"evals": [{"prompt": "b", "should_trigger": false}, {"prompt": "c"}]}')
    assert [(e.query, e.should) for e in listed + wrapped] == [("a", True), ("b", False)]
    assert problems == [] and more == [
        'evals/eval_queries.json item 2 needs "query" (a non-empty string) and "should_trigger" (true/false)'
    ]
    assert parse_frontmatter_examples(["a"])[1] == [
        "frontmatter `evals` must be a mapping with `should:` and `should_not:` lists"
    ]


def test_the_scaffolded_examples_are_placeholders_eval_skips_and_reports(tmp_path: Path) -> None:
    code, output = run("new", "--library", str(tmp_path), "testing/webapp-smoke")
    assert code == 0, output
    code, report = eval_json(tmp_path, "--threshold", "0")
    (skill,) = report["skills"]
    assert skill["queries"] == []
    assert skill["problems"] == [
        "3 examples still hold the placeholder text of `skillshelf new` (TODO: ...), not run; write real requests "
        "in their place"
    ]


def test_eval_runs_on_the_bundled_library(tmp_path: Path) -> None:
    bundled = Path(__file__).resolve().parents[2] / "patterns"
    code, report = eval_json(bundled)
    assert code == 0
    assert {s["id"] for s in report["skills"]} >= {"devops/dockerfile-hardening"}
    assert report["findability"]["unreachable"] == []


def test_the_web_library_page_and_get_library_stats_show_findability(tmp_path: Path) -> None:
    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.metrics.library_stats import library_stats
    from skillshelf.web.pages import library_page
    from skillshelf.web.stats import library_view

    root = colliding_library(tmp_path / "library")
    agent_skill(root, "ops", "zz-tool", "name: zz-tool\ndescription: Deploy helper.")
    for n in range(4, 6):
        agent_skill(root, "ops", f"deploy-helper-{n}", f"name: deploy-helper-{n}\ndescription: Deploy helper {n}.")
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    try:
        library.sync()
        reader = LibraryReader(library)
        found = library_stats(reader).findability
        assert found is not None
        assert [c.skills for c in found.collisions] == [("docs/changelog-helper", "docs/release-writer")]
        assert [u.id for u in found.unreachable] == ["ops/zz-tool"]
        page = library_page("/web", library_view(reader))
    finally:
        library.close()
    assert 'id="findability"' in page and 'href="/web/skills/ops/zz-tool/"' in page
    assert 'href="/web/skills/docs/release-writer/"' in page


def test_check_findability_refuses_a_single_skill(tmp_path: Path) -> None:
    root = colliding_library(tmp_path / "library")
    code, output = run("check", "--findability", str(root / "docs" / "release-writer"))
    assert code == 2 and "--findability searches a whole library" in output


def test_eval_ranks_by_meaning_when_it_is_on_and_says_so(tmp_path: Path) -> None:
    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.skills.evals import run_evals
    from tests.conftest import deadline
    from tests.library.tiny_model import tiny_model

    root = examples_library(tmp_path / "library")
    config = LibraryConfig(
        roots=[root], index_dir=tmp_path / "index", watch=False, semantic_model=tiny_model(tmp_path / "m")
    )
    library = SkillLibrary(config)
    try:
        library.sync()
        assert library.semantic is not None and library.semantic.wait_idle(timeout=deadline(120))
        report = run_evals(LibraryReader(library), 0.5)
    finally:
        library.close()
    assert report.by_meaning and report.warnings is None
    assert report.examples == 5
