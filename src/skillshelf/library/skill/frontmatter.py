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

from skillshelf.library.skill.reading import Reporter

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_EXPANDED_NODES = 10_000  # far above any honest frontmatter; a 400-byte alias bomb expands to millions
_OPENING = re.compile(r"\A-{3,}[ \t]*\n")
_PLAIN_KEY_VALUE = re.compile(r"^([A-Za-z0-9_-]+):[ \t]+(.*\S)[ \t]*$")


YAMLError = yaml.YAMLError


class AliasBomb(yaml.YAMLError):
    """Aliases that would expand the document past MAX_EXPANDED_NODES values."""


def safe_load(text: str) -> Any:
    """`yaml.safe_load` that refuses documents whose aliases expand past a small cap.

    The node graph is composed first (aliases are shared references there, so it stays as small
    as the text) and its expanded size counted with memoisation; only then is it built.
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded = _expanded_size(node, {})
        if expanded > MAX_EXPANDED_NODES:
            raise AliasBomb(f"aliases expand it to over {MAX_EXPANDED_NODES} values")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = MAX_EXPANDED_NODES + 1  # a node reached again while being counted: a recursive alias
    if isinstance(node, yaml.MappingNode):
        total = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        total = 1 + sum(_expanded_size(item, sizes) for item in node.value)
    else:
        total = 1
    sizes[id(node)] = min(total, MAX_EXPANDED_NODES + 1)
    return sizes[id(node)]


def split_frontmatter(text: str) -> Any:
    """The frontmatter of a document exactly as YAML reads it (no recovery): what a strict client sees.

    ValueError when there is no frontmatter block; YAMLError (AliasBomb included) when it is not YAML."""
    raw_yaml, _body = _HANDLER.split(text)
    return safe_load(raw_yaml)


def dump_frontmatter(data: dict[str, Any]) -> str:
    """`data` as YAML frontmatter lines (no `---`), in insertion order."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000)


class _LibYAMLHandler(YAMLHandler):
    def load(self, fm: str, **kwargs: object) -> Any:
        return safe_load(fm)


_HANDLER = _LibYAMLHandler()


@dataclass
class ParsedDocument:
    metadata: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = False


def parse_document(text: str, report: Reporter) -> ParsedDocument:
    split = _split(text)
    if split is None:
        return ParsedDocument(body=text)
    if split.closed:
        metadata = _load_mapping(split.raw_yaml, report, first_line=1)  # raw_yaml starts with the opening newline
    else:
        report.add(
            "error",
            "frontmatter-unclosed",
            "frontmatter opened with '---' on line 1 is never closed; add a '---' line after the last key",
            1,
        )
        metadata = _load_mapping(split.raw_yaml, Reporter(report.path, report.root), first_line=2)
    return ParsedDocument(metadata=metadata, body=split.body, has_frontmatter=True)


def document_body(text: str) -> str:
    """`parse_document(text, ...).body` without loading the frontmatter's YAML: what a load serves is the body
    alone, and the YAML was a tenth of a first load's work on a skill with frontmatter (issue 36)."""
    split = _split(text)
    return text if split is None else split.body


@dataclass(frozen=True)
class _Split:
    raw_yaml: str
    body: str
    closed: bool  # False: an opening `---` never closed, so the frontmatter ends where the markdown starts


def _split(text: str) -> _Split | None:
    """The frontmatter's text and the body (None: no frontmatter); the one place a document is split."""
    if not _OPENING.match(text):
        return None
    try:
        raw_yaml, body = _HANDLER.split(text)
    except ValueError:
        lines = text.split("\n")
        end = 1
        while end < len(lines) and lines[end].strip() and not lines[end].startswith("#"):
            end += 1
        return _Split("\n".join(lines[1:end]), "\n".join(lines[end:]).lstrip("\n"), closed=False)
    return _Split(raw_yaml, body.lstrip("\n"), closed=True)


def _load_mapping(raw_yaml: str, report: Reporter, first_line: int) -> dict[str, Any]:
    try:
        loaded = safe_load(raw_yaml)
    except AliasBomb as exc:
        report.add(
            "error",
            "frontmatter-alias-bomb",
            f"frontmatter was refused: its YAML {exc}; it was ignored. Write the values out instead of aliasing them.",
            first_line,
        )
        return {}
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
            + _yaml_hint(exc, first_line),
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


def _yaml_hint(exc: yaml.YAMLError, first_line: int) -> str:
    """What to change for this YAML error: a tab is fixed with spaces, most of the rest by quoting."""
    if "tab" in str(getattr(exc, "problem", None) or exc):
        mark = getattr(exc, "problem_mark", None)  # the tab itself, not the construct it broke
        where = f" on line {first_line + mark.line}" if mark is not None else ""
        return f"YAML indents with spaces only: replace the tab{where} with spaces."
    return "Quote values containing ': ' or '#'."


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
        loaded = safe_load("\n".join(lines))
    except yaml.YAMLError:
        return None
    return normalise(loaded) if isinstance(loaded, dict) else None


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
