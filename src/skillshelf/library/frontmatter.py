"""YAML frontmatter: split with python-frontmatter, load with libyaml, recover what can be.

Real libraries hold frontmatter that strict YAML rejects: unquoted `: ` inside a description,
a `---` that is never closed. Agents' clients recover these (Agent Skills client guide), so
skillshelf does too, and reports each case so the curator can fix the file.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from skillshelf.library.reading import Reporter

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENING = re.compile(r"\A-{3,}[ \t]*\n")
_PLAIN_KEY_VALUE = re.compile(r"^([A-Za-z0-9_-]+):[ \t]+(.*\S)[ \t]*$")


class _LibYAMLHandler(YAMLHandler):
    def load(self, fm: str, **kwargs: object) -> Any:
        return yaml.load(fm, Loader=_Loader)


_HANDLER = _LibYAMLHandler()


@dataclass
class ParsedDocument:
    metadata: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = False


def parse_document(text: str, report: Reporter) -> ParsedDocument:
    if not _OPENING.match(text):
        return ParsedDocument(body=text)
    try:
        raw_yaml, body = _HANDLER.split(text)
    except ValueError:
        return _recover_unclosed(text, report)
    metadata = _load_mapping(raw_yaml, report, first_line=1)  # raw_yaml starts with the opening line's newline
    return ParsedDocument(metadata=metadata, body=body.lstrip("\n"), has_frontmatter=True)


def _load_mapping(raw_yaml: str, report: Reporter, first_line: int) -> dict[str, Any]:
    try:
        loaded = yaml.load(raw_yaml, Loader=_Loader)
    except yaml.YAMLError as exc:
        # Where the broken construct starts (an unclosed '[') helps more than where parsing gave up.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        recovered = _requote_plain_values(raw_yaml)
        if recovered is not None:
            report.add(
                "warning",
                "frontmatter-recovered",
                f"YAML does not parse ({getattr(exc, 'problem', None) or 'syntax error'}); read it by quoting "
                "values that contain ': '. Quote such values in the file.",
                line,
            )
            return recovered
        report.add(
            "error",
            "frontmatter-invalid-yaml",
            f"frontmatter is not valid YAML ({getattr(exc, 'problem', None) or exc}); it was ignored. "
            "Quote values containing ': ' or '#'.",
            line,
        )
        return {}
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        report.add(
            "error",
            "frontmatter-not-mapping",
            f"frontmatter must be a mapping of keys to values, not a {type(loaded).__name__}",
            first_line,
        )
        return {}
    normalised: dict[str, Any] = normalise(loaded)
    return normalised


def _requote_plain_values(raw_yaml: str) -> dict[str, Any] | None:
    """Retry after quoting top-level plain values that contain ': ' (the common hand-edit error)."""
    lines = raw_yaml.split("\n")
    changed = False
    for index, line in enumerate(lines):
        match = _PLAIN_KEY_VALUE.match(line)
        if match and ": " in match.group(2) and match.group(2)[0] not in "'\"[{|>&*!":
            lines[index] = f"{match.group(1)}: {json.dumps(match.group(2), ensure_ascii=False)}"
            changed = True
    if not changed:
        return None
    try:
        loaded = yaml.load("\n".join(lines), Loader=_Loader)
    except yaml.YAMLError:
        return None
    return normalise(loaded) if isinstance(loaded, dict) else None


def _recover_unclosed(text: str, report: Reporter) -> ParsedDocument:
    """An opening `---` with no closing one: the frontmatter ends where the markdown starts."""
    lines = text.split("\n")
    end = 1
    while end < len(lines) and lines[end].strip() and not lines[end].startswith("#"):
        end += 1
    report.add(
        "error",
        "frontmatter-unclosed",
        "frontmatter opened with '---' on line 1 is never closed; add a '---' line after the last key",
        1,
    )
    quiet = Reporter(report.path, report.root)
    metadata = _load_mapping("\n".join(lines[1:end]), quiet, first_line=2)
    body = "\n".join(lines[end:]).lstrip("\n")
    return ParsedDocument(metadata=metadata, body=body, has_frontmatter=True)


def normalise(value: Any) -> Any:
    """YAML's dates, numbers-as-keys and other non-JSON values become JSON-safe values."""
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [normalise(v) for v in value]
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
