"""Rule evaluation: mcp-filter's test vectors verbatim, the glob dialect, skill selectors, properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from skillshelf.library.access.rules import (
    PatternError,
    Rule,
    SkillFacts,
    check_rules,
    decide_skill,
    decide_tool,
    glob_match,
    tool_kept,
)

BROWSER = ["browser_close", "browser_navigate", "browser_close_tab", "browser_close_window", "other_tool"]


def kept(rules: list[Rule], names: list[str]) -> list[str]:
    return [n for n in names if tool_kept(rules, n)]


# -- the seed's vectors (reference/seed-systems.md §1.2), verbatim -----------------------------
def test_exclude_then_include_blocks_the_excluded_and_everything_unmatched() -> None:
    rules: list[Rule] = [("exclude", "browser_close"), ("include", "browser_*")]
    assert not tool_kept(rules, "browser_close")
    assert tool_kept(rules, "browser_navigate")
    assert not tool_kept(rules, "other_tool")


def test_include_then_exclude_keeps_what_the_include_matched_first() -> None:
    assert tool_kept([("include", "browser_*"), ("exclude", "browser_close")], "browser_close")


def test_layered_rules_keep_every_browser_tool_because_the_first_include_matches_first() -> None:
    rules: list[Rule] = [("include", "browser_*"), ("exclude", "browser_close*"), ("include", "browser_close_tab")]
    assert kept(rules, BROWSER) == [n for n in BROWSER if n.startswith("browser_")]


def test_exclude_resolve_star_blocks_resolve_library_id_but_not_resolve() -> None:
    rules: list[Rule] = [("exclude", "resolve-*")]
    assert not tool_kept(rules, "resolve-library-id")
    assert tool_kept(rules, "resolve")


def test_a_trailing_star_matches_the_bare_prefix() -> None:
    assert not tool_kept([("exclude", "playwright*")], "playwright")


def test_a_star_in_the_middle() -> None:
    assert glob_match("test_*_debug", "test_foo_debug")
    assert glob_match("test_*_debug", "test_bar_baz_debug")
    assert not glob_match("test_*_debug", "test_debug")


def test_include_allowed_then_exclude_everything_keeps_exactly_one_tool() -> None:
    assert kept([("include", "allowed_*"), ("exclude", "*")], ["allowed_tool", "other", "x_allowed_y"]) == [
        "allowed_tool"
    ]


def test_exclude_everything_removes_everything() -> None:
    assert kept([("exclude", "*")], BROWSER) == []


# -- defaults ----------------------------------------------------------------------------------
def test_an_empty_filter_keeps_everything_and_says_why() -> None:
    decision = decide_tool([], "anything")
    assert decision.kept and decision.rule is None
    assert "empty filter" in decision.reason([])


def test_only_excludes_keep_the_unmatched_and_only_includes_hide_them() -> None:
    assert tool_kept([("exclude", "a*")], "b")
    assert not tool_kept([("include", "a*")], "b")


def test_the_decision_names_the_rule_and_its_position() -> None:
    rules: list[Rule] = [("exclude", "x"), ("include", "search*")]
    decision = decide_tool(rules, "searchPatterns")
    assert decision.position == 1 and decision.rule == ("include", "search*")
    assert decision.reason(rules) == "rule 2 (include 'search*') matched first"


# -- the glob dialect --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("python/*", "python/retry", True),
        ("python/*", "python/a/b", False),  # * never crosses /
        ("*", "python/retry", False),
        ("**", "python/retry", True),
        ("**/retry-*", "python/retry-backoff", True),
        ("py?hon/*", "python/x", True),
        ("?", "/", False),
        ("[pg]*/x", "go/x", True),
        ("[!pg]*/x", "go/x", False),
        ("[^pg]*/x", "rust/x", True),
        ("{python,go}/*", "go/slugify", True),
        ("{python,go}/*", "rust/slugify", False),
        ("{a,{b,c}d}", "cd", True),
        ("Search*", "searchPatterns", False),  # case-sensitive
        ("a.b", "aXb", False),  # a dot is literal
        (r"a\*", "a*", True),
        (r"a\*", "ab", False),
    ],
)
def test_glob_dialect(pattern: str, text: str, expected: bool) -> None:
    assert glob_match(pattern, text) is expected


@pytest.mark.parametrize("pattern", ["[abc", "{a,b", "a}", "", "x\\"])
def test_broken_globs_are_errors_that_say_what_is_wrong(pattern: str) -> None:
    with pytest.raises(PatternError):
        glob_match(pattern, "x")


# -- skill selectors ---------------------------------------------------------------------------
SKILL = SkillFacts(id="python/retry-backoff", tags=("http", "resilience"), quality=8.5, layout="three-file")


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("python/*", True),
        ("go/*", False),
        ("tag:http", True),
        ("tag:res*", True),
        ("tag:security", False),
        ("quality>=8.5", True),
        ("quality>8.5", False),
        ("quality < 9", True),
        ("quality=8.5", True),
        ("layout:three-file", True),
        ("layout:folder", False),
        ("layout:folder|three-file", True),
    ],
)
def test_skill_selectors(pattern: str, expected: bool) -> None:
    assert decide_skill([("include", pattern)], SKILL).kept is expected


def test_a_category_named_quality_is_still_an_id_glob() -> None:
    assert decide_skill([("include", "quality/*")], SkillFacts(id="quality/lint")).kept


def test_check_rules_names_each_broken_rule_and_refuses_selectors_on_tools() -> None:
    skill_problems = check_rules(
        [("include", "tag:x"), ("exclude", "quality>>3"), ("include", "layout:zip")], skills=True
    )
    assert [p.split(":")[0] for p in skill_problems] == ["rule 2", "rule 3"]
    assert "quality>=7" in skill_problems[0] and "folder" in skill_problems[1]
    tool_problems = check_rules([("include", "tag:x"), ("include", "ok*")], skills=False)
    assert len(tool_problems) == 1 and "apply to skills" in tool_problems[0]


# -- properties ---------------------------------------------------------------------------------
NAMES = st.text(alphabet="abc_/", min_size=1, max_size=8)
RULES = st.lists(st.tuples(st.sampled_from(["include", "exclude"]), st.sampled_from(["a*", "*b", "**", "c", "a/*"])))


@given(NAMES)
def test_a_literal_name_matches_itself(name: str) -> None:
    assert glob_match(name.replace("*", ""), name.replace("*", "")) or "*" in name


@given(RULES, NAMES)
def test_the_first_matching_rule_decides_whatever_follows(rules: list[Rule], name: str) -> None:
    decision = decide_tool(rules, name)
    if decision.rule is not None:
        assert decide_tool([*rules[: (decision.position or 0) + 1], ("exclude", "**"), ("include", "**")], name) == (
            decision
        )
    else:
        assert decision.kept == (not any(a == "include" for a, _ in rules))


@given(RULES, NAMES)
def test_adding_an_exclude_never_keeps_more(rules: list[Rule], name: str) -> None:
    if not tool_kept(rules, name):
        assert not tool_kept([*rules, ("exclude", "**")], name)
