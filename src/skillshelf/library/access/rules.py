"""Ordered include/exclude rules (mcp-filter semantics) over tool names and skills. Pure functions.

Evaluation: the rules are tried in order and the first one that matches decides (include keeps,
exclude hides). When none matches, the item is hidden if any include rule exists, else kept. So no
rules at all (an empty filter) keeps everything.

Glob dialect (the same for tool names and skill ids), case-sensitive, whole-string:
- `*` any run of characters except `/` (so `python/*` is one category, `*` never crosses a `/`);
- `**` any run of characters, `/` included (`**/retry-*` is every category);
- `?` one character except `/`;
- `[abc]`, `[a-z]`, `[!abc]` (or `[^abc]`) one character of (or not of) the set;
- `{a,b,c}` any of the alternatives, which may hold globs themselves (`{python,go}/*`);
- `\\x` the character x literally. Everything else, dots included, is literal.

Skill rules may also use selectors instead of an id glob:
- `tag:GLOB` a skill with a tag matching GLOB (`tag:security`, `tag:py*`);
- `quality>=7` (also `>`, `<=`, `<`, `=`) the skill's quality score (0-10);
- `layout:folder`, `layout:agent-skills` (the same layout), `layout:three-file`; `|` separates
  alternatives: `layout:folder|three-file`.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Action = Literal["include", "exclude"]
Rule = tuple[Action, str]

LAYOUT_ALIASES = {"folder": "agent-skills", "agent-skills": "agent-skills", "three-file": "three-file"}
_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "=": operator.eq,
}
_QUALITY = re.compile(r"^quality\s*(>=|<=|>|<|=)\s*(\d+(?:\.\d+)?)$")
_QUALITY_LIKE = re.compile(r"^quality\s*[<>=]")  # `quality/*` stays an id glob (a category may be so named)


class PatternError(ValueError):
    """A rule that cannot be compiled; the message says what to fix."""


@dataclass(frozen=True)
class SkillFacts:
    """What skill rules can look at."""

    id: str
    tags: tuple[str, ...] = ()
    quality: float = 0.0
    layout: str = "agent-skills"


@dataclass(frozen=True)
class Decision:
    kept: bool
    rule: Rule | None  # the rule that decided; None when no rule matched
    position: int | None  # its index in the list (0-based)

    def reason(self, rules: Sequence[Rule]) -> str:
        if self.rule is not None:
            action, pattern = self.rule
            return (
                f"rule {self.position + 1 if self.position is not None else '?'} ({action} {pattern!r}) matched first"
            )
        if not rules:
            return "no rules: an empty filter keeps everything"
        if any(a == "include" for a, _ in rules):
            return "no rule matched and include rules exist, so it is hidden"
        return "no rule matched and there are only exclude rules, so it is kept"


# -- globs -------------------------------------------------------------------------------------
def _split_alternatives(body: str, pattern: str) -> list[str]:
    parts, depth, start, i = [], 0, 0, 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return parts


def _closing(pattern: str, start: int, opener: str, closer: str) -> int:
    """Index of the bracket closing the one at `start`, or -1."""
    depth, i = 0, start
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == opener:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _translate(pattern: str, whole: str) -> str:  # noqa: PLR0912 - one branch per kind of glob token
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 >= len(pattern):
                raise PatternError(f"{whole!r}: a trailing backslash escapes nothing")
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif char == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 2
            else:
                out.append("[^/]*")
                i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if pattern[i + 1 : i + 2] == "]":  # `[]a]`: a leading ] is literal
                end = pattern.find("]", i + 2)
            if end < 0:
                raise PatternError(f"{whole!r}: '[' at position {i} has no closing ']'")
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            escaped = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[").replace("]", "\\]")
            out.append(f"[{'^/' if negate else ''}{escaped}]")
            i = end + 1
        elif char == "{":
            end = _closing(pattern, i, "{", "}")
            if end < 0:
                raise PatternError(f"{whole!r}: '{{' at position {i} has no closing '}}'")
            options = _split_alternatives(pattern[i + 1 : end], whole)
            out.append("(?:" + "|".join(_translate(o, whole) for o in options) + ")")
            i = end + 1
        elif char == "}":
            raise PatternError(f"{whole!r}: '}}' at position {i} closes nothing")
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise PatternError("an empty pattern matches nothing; write '*' for every name")
    return re.compile(_translate(pattern, pattern), re.DOTALL)


def glob_match(pattern: str, text: str) -> bool:
    return compile_glob(pattern).fullmatch(text) is not None


# -- selectors and rules -----------------------------------------------------------------------
def is_selector(pattern: str) -> bool:
    return pattern.startswith(("tag:", "layout:")) or _QUALITY_LIKE.match(pattern) is not None


@lru_cache(maxsize=1024)
def compile_skill_pattern(pattern: str) -> Callable[[SkillFacts], bool]:
    """A predicate for one skill pattern: a selector or an id glob. PatternError says what is wrong."""
    if pattern.startswith("tag:"):
        glob = compile_glob(pattern[4:] or "")
        return lambda skill: any(glob.fullmatch(tag) for tag in skill.tags)
    if pattern.startswith("layout:"):
        wanted = set()
        for name in pattern[7:].split("|"):
            if name.strip() not in LAYOUT_ALIASES:
                raise PatternError(
                    f"{pattern!r}: unknown layout {name.strip()!r}; use folder, agent-skills or three-file"
                )
            wanted.add(LAYOUT_ALIASES[name.strip()])
        return lambda skill: skill.layout in wanted
    if _QUALITY_LIKE.match(pattern):
        found = _QUALITY.match(pattern)
        if found is None:
            raise PatternError(f"{pattern!r}: write a quality selector as quality>=7 (or >, <=, <, =) with a number")
        compare, bound = _COMPARISONS[found.group(1)], float(found.group(2))
        return lambda skill: compare(skill.quality, bound)
    glob = compile_glob(pattern)
    return lambda skill: glob.fullmatch(skill.id) is not None


def check_rules(rules: Iterable[Rule], *, skills: bool) -> list[str]:
    """Every problem in a rule list, as text naming the rule (empty: the rules are usable)."""
    problems = []
    for position, (_action, pattern) in enumerate(rules, start=1):
        try:
            if skills:
                compile_skill_pattern(pattern)
            else:
                if is_selector(pattern):
                    raise PatternError(f"{pattern!r}: selectors (tag:, quality, layout:) apply to skills, not tools")
                compile_glob(pattern)
        except PatternError as exc:
            problems.append(f"rule {position}: {exc}")
    return problems


def decide(rules: Sequence[Rule], matches: Callable[[str], bool]) -> Decision:
    """First matching rule decides; with none, hidden if any include rule exists, else kept."""
    for position, rule in enumerate(rules):
        if matches(rule[1]):
            return Decision(rule[0] == "include", rule, position)
    return Decision(not any(action == "include" for action, _ in rules), None, None)


def decide_tool(rules: Sequence[Rule], name: str) -> Decision:
    return decide(rules, lambda pattern: glob_match(pattern, name))


def decide_skill(rules: Sequence[Rule], skill: SkillFacts) -> Decision:
    return decide(rules, lambda pattern: compile_skill_pattern(pattern)(skill))


def tool_kept(rules: Sequence[Rule], name: str) -> bool:
    return decide_tool(rules, name).kept


def needs_details(rules: Iterable[Rule]) -> bool:
    """Whether deciding needs more than a skill's id (a tag, quality or layout selector)."""
    return any(is_selector(pattern) for _, pattern in rules)
