"""A skill's trigger examples as written: frontmatter `evals:` (`should:` and `should_not:` lists of requests)
or the Agent Skills guides' `evals/eval_queries.json`. Parsing only; skills/evals.py reads and runs them,
and `skillshelf check` reports a malformed `evals:` here."""

from __future__ import annotations

import json
from dataclasses import dataclass

EVALS_FILE = "evals/eval_queries.json"
FRONTMATTER_KEY = "evals"  # evals: {should: [...], should_not: [...]}
MAX_EXAMPLES = 50  # per skill: more is a data set, not trigger examples
PLACEHOLDER = "TODO:"  # how `skillshelf new`'s example queries start: never run, reported until replaced


@dataclass(frozen=True)
class Example:
    query: str
    should: bool  # should pick the skill (True) or should not (False)


def parse_frontmatter_examples(value: object) -> tuple[list[Example], list[str]]:
    """`evals:` of a skill's frontmatter: a mapping with `should` and `should_not`, each a list of strings."""
    if value is None:
        return [], []
    if not isinstance(value, dict):
        return [], [f"frontmatter `{FRONTMATTER_KEY}` must be a mapping with `should:` and `should_not:` lists"]
    problems = [
        f"frontmatter `{FRONTMATTER_KEY}` has an unknown key {key!r}; use `should` and `should_not`"
        for key in value
        if key not in ("should", "should_not")
    ]
    examples: list[Example] = []
    for key, should in (("should", True), ("should_not", False)):
        items = value.get(key) or []
        if not isinstance(items, list) or not all(isinstance(q, str) and q.strip() for q in items):
            problems.append(f"frontmatter `{FRONTMATTER_KEY}.{key}` must be a list of non-empty strings")
            continue
        examples += [Example(q.strip(), should) for q in items]
    return _capped(examples, problems)


def parse_eval_file(text: str) -> tuple[list[Example], list[str]]:
    """evals/eval_queries.json: `[{"query": ..., "should_trigger": true}, ...]` or `{"evals": [...]}`
    (each item's text under `query` or `prompt`), as the Agent Skills guides' skill-creator writes it."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return [], [f"{EVALS_FILE} is not valid JSON: {exc}"]
    if isinstance(data, dict) and isinstance(data.get("evals"), list):
        data = data["evals"]
    if not isinstance(data, list):
        return [], [f'{EVALS_FILE} must be a list of {{"query": "...", "should_trigger": true}} items']
    examples: list[Example] = []
    problems: list[str] = []
    for at, item in enumerate(data, 1):
        query = item.get("query", item.get("prompt")) if isinstance(item, dict) else None
        should = item.get("should_trigger") if isinstance(item, dict) else None
        if not isinstance(query, str) or not query.strip() or not isinstance(should, bool):
            problems.append(
                f'{EVALS_FILE} item {at} needs "query" (a non-empty string) and "should_trigger" (true/false)'
            )
            continue
        examples.append(Example(query.strip(), should))
    return _capped(examples, problems)


def _capped(examples: list[Example], problems: list[str]) -> tuple[list[Example], list[str]]:
    placeholders = [e for e in examples if e.query.startswith(PLACEHOLDER)]
    if placeholders:
        examples = [e for e in examples if not e.query.startswith(PLACEHOLDER)]
        count = len(placeholders)
        problems.append(
            f"{count} example{'' if count == 1 else 's'} still {'holds' if count == 1 else 'hold'} the placeholder "
            f"text of `skillshelf new` ({PLACEHOLDER} ...), not run; write real requests in their place"
        )
    if len(examples) > MAX_EXAMPLES:
        problems.append(f"{len(examples)} examples; the first {MAX_EXAMPLES} are used")
    return examples[:MAX_EXAMPLES], problems
