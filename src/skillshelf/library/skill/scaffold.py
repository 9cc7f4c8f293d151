"""`skillshelf new`: a new skill from a scaffold, in either layout, that `skillshelf check` passes with no
finding but one: a `scaffold-text` warning until its placeholders are written (`scaffold_leftovers`).

What the curator must fill in is marked `TODO:` (the word every editor highlights and `grep -rn TODO`
finds), inside text that is valid as it stands: the description is a real sentence of the right length
that says it is a placeholder and names the skill, the body has the sections the quality estimate looks
for, and a script runs and answers in JSON. An unfinished scaffold is served like any skill, so an agent
that meets one reads "TODO" in its description, and its body (under 150 words) keeps its estimated
quality at 6.0 at most: it is never verified until it is written.

Nothing is overwritten: a skill with the same id anywhere in the library, or any file the scaffold
would write, refuses the whole scaffold. Files appear complete: a folder skill is written into a hidden
folder and renamed into place; a three-file skill's files are each linked into place (which fails
rather than replace), its document last, so a watching server never indexes half a skill.
"""

from __future__ import annotations

import json
import keyword
import re
import shutil
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.atomic import write_atomically
from skillshelf.library.skill.discovery import CODE_EXTENSIONS, IGNORED_NAMES, METADATA_SUFFIX, library_base
from skillshelf.library.skill.examples import EVALS_FILE
from skillshelf.library.skill.layouts import MAX_NAME, NAME_RULE, RESERVED_WORDS, valid_name

LayoutChoice = Literal["folder", "three-file"]
ScriptChoice = Literal["py", "sh", "js"]
LAYOUTS: tuple[LayoutChoice, ...] = ("folder", "three-file")
SCRIPTS: tuple[ScriptChoice, ...] = ("py", "sh", "js")
CATEGORY_RULE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
EXECUTABLE = 0o755  # scripts, and the skill's folder (a temporary folder starts at 0o700)


@dataclass(frozen=True)
class Scaffold:
    """A skill written from the scaffold: its id and the files written, relative to the library root."""

    skill_id: str
    root: Path
    files: list[str]
    script: str | None  # what `skillshelf run` runs, relative to the skill's folder, when there is one


def parse_skill_id(text: str, layout: LayoutChoice = "folder") -> tuple[str, str]:
    """(category, name) of 'CATEGORY/NAME', or a VALIDATION_ERROR saying what a valid one looks like.

    The name follows the Agent Skills naming rules (`valid_name`); a three-file skill's file name takes
    ASCII only (its check is stricter)."""
    parts = text.strip().split("/")
    if len(parts) != 2 or not all(parts):
        raise _invalid(f"{text!r} is not CATEGORY/NAME; give both, e.g. 'testing/webapp-smoke-test'")
    category, name = parts
    if not CATEGORY_RULE.match(category) or category in IGNORED_NAMES or category == "patterns":
        raise _invalid(
            f"category {category!r} cannot hold skills: use letters, digits, '-', '_' or '.', not starting with "
            f"'.' or '-', and not one of {', '.join(sorted(IGNORED_NAMES | {'patterns'}))}"
        )
    if not valid_name(name) or name != unicodedata.normalize("NFKC", name) or not _ascii_if(layout, name):
        letters = "letters (a-z)" if layout == "three-file" else "letters"
        raise _invalid(
            f"name {name!r} breaks the Agent Skills naming rules: 1-{MAX_NAME} lowercase {letters}, digits and "
            "single hyphens, not starting or ending with a hyphen, e.g. 'webapp-smoke-test'"
        )
    if any(word in name for word in RESERVED_WORDS):
        raise _invalid(f"name {name!r} contains a word Anthropic's platform rejects ({' or '.join(RESERVED_WORDS)})")
    return category, name


def _ascii_if(layout: LayoutChoice, name: str) -> bool:
    return layout != "three-file" or NAME_RULE.match(name) is not None


def write_scaffold(
    root: Path,
    skill_id: str,
    layout: LayoutChoice = "folder",
    script: ScriptChoice | None = None,
    taken: frozenset[str] = frozenset(),
) -> Scaffold:
    """Write the skill `skill_id` under the library root `root`; `taken` holds the ids the library has
    already (in every root), which are refused like an existing file."""
    category, name = parse_skill_id(skill_id, layout)
    if layout == "three-file" and script == "sh":
        raise _invalid(
            "a three-file skill runs a Python or JavaScript function (name.py, name.js); for a shell script use "
            "--layout folder"
        )
    if not root.is_dir():
        raise _invalid(f"library root {root} is not a folder; create it first (skillshelf init {root}, or mkdir)")
    folder = library_base(root) / category
    if f"{category}/{name}" in taken:
        raise _invalid(f"the library already has a skill {category}/{name}; choose another name")
    if (folder / "SKILL.md").exists() or (folder / "skill.md").exists():
        raise _invalid(f"{folder} is itself a skill folder, so it cannot be a category; choose another category")
    writer = _FolderWriter if layout == "folder" else _ThreeFileWriter
    return writer(root, folder, category, name, script).write()


class _Writer:
    def __init__(self, root: Path, folder: Path, category: str, name: str, script: ScriptChoice | None) -> None:
        self.root, self.folder, self.category, self.name, self.script = root, folder, category, name, script

    @property
    def skill_id(self) -> str:
        return f"{self.category}/{self.name}"

    def write(self) -> Scaffold:
        raise NotImplementedError

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


class _FolderWriter(_Writer):
    """<category>/<name>/SKILL.md, and scripts/<name>.<ext> with --script."""

    def write(self) -> Scaffold:
        target = self.folder / self.name
        suffixes = (".md", METADATA_SUFFIX, *CODE_EXTENSIONS)  # a three-file skill of this id, or part of one
        clashes = [target, *(self.folder / f"{self.name}{suffix}" for suffix in suffixes)]
        _refuse_existing(clashes)
        self.folder.mkdir(parents=True, exist_ok=True)
        script = f"scripts/{self.name}.{self.script}" if self.script else None
        staging = Path(tempfile.mkdtemp(prefix=f".new-{self.name}-", dir=self.folder))  # hidden: never discovered
        try:
            (staging / "SKILL.md").write_text(folder_document(self.category, self.name, script), encoding="utf-8")
            (staging / "evals").mkdir()
            (staging / EVALS_FILE).write_text(eval_queries(self.name), encoding="utf-8")
            if script and self.script:
                _write_script(staging / script, script_text(self.script, self.name))
            staging.chmod(EXECUTABLE)
            _refuse_existing([target])
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        files = [target / "SKILL.md", target / EVALS_FILE, *([target / script] if script else [])]
        return Scaffold(self.skill_id, self.root, [self.relative(f) for f in files], script)


class _ThreeFileWriter(_Writer):
    """<category>/<name>.md, <name>-SKILL.md (metadata), and <name>.py or .js with --script."""

    def write(self) -> Scaffold:
        doc = self.folder / f"{self.name}.md"
        meta = self.folder / f"{self.name}{METADATA_SUFFIX}"
        code = self.folder / f"{self.name}.{self.script}" if self.script else None
        others = [self.folder / f"{self.name}{ext}" for ext in CODE_EXTENSIONS] + [self.folder / self.name]
        _refuse_existing([doc, meta, *others])
        self.folder.mkdir(parents=True, exist_ok=True)
        contents: list[tuple[Path, str]] = [(meta, three_file_metadata(self.name))]
        if code is not None and self.script:
            contents.append((code, implementation_text(self.script, self.name)))
        contents.append((doc, three_file_document(self.category, self.name, code.name if code else None)))
        written: list[Path] = []
        try:
            for path, text in contents:  # the document last: the skill exists once it is there
                _link_new(path, text, executable=path == code)
                written.append(path)
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)
            raise
        return Scaffold(self.skill_id, self.root, [self.relative(p) for p in written], code.name if code else None)


def _refuse_existing(paths: list[Path]) -> None:
    present = [p for p in paths if p.exists() or p.is_symlink()]
    if present:
        listed = ", ".join(str(p) for p in present)
        raise _invalid(f"{listed} already exists; skillshelf new never overwrites. Choose another name or move it")


def _link_new(path: Path, text: str, *, executable: bool) -> None:
    """Write `path` whole or not at all, and never over an existing file (a hard link refuses to)."""
    try:
        write_atomically(path, text, mode=EXECUTABLE if executable else 0o644, replace=False)
    except FileExistsError:
        raise _invalid(f"{path} already exists; skillshelf new never overwrites. Choose another name") from None


def _write_script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(EXECUTABLE)


def _invalid(message: str) -> SkillshelfError:
    return SkillshelfError(ErrorCode.VALIDATION_ERROR, message)


# -- what the files say ---------------------------------------------------------------------------


def title_of(name: str) -> str:
    return " ".join(part.capitalize() for part in name.split("-"))


DESCRIPTION_START = "TODO: say in one or two sentences what "


def placeholder_description(name: str) -> str:
    """Valid as it stands (50-1024 characters, "use when" guidance, no angle brackets), plainly a placeholder."""
    return (
        f"{DESCRIPTION_START}{name} does and what it produces. "
        f"Use when TODO: the situations in which an agent should choose {name}."
    )


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is a subset of it)."""
    return json.dumps(text, ensure_ascii=False)


BODY = """\
TODO: one paragraph on what this skill does, for whom, and what a good result looks like.

## When to use

- TODO: the situations in which an agent should pick this skill.
- TODO: when not to use it, and what to use instead.

## Steps

1. TODO: the first thing to do, and why.
2. TODO: what to check before going on.
3. TODO: how to finish, and what to hand back.

## Example

```text
TODO: a short, real example: what goes in and what comes out.
```
"""

VERIFICATION = """
## Verification

- TODO: how to tell that the result is right.
"""


def _script_section(skill_id: str, script: str, how: str) -> str:
    return f"""
## Script

`{script}` {how} Run it with:

```sh
skillshelf run {skill_id} --input '{{"text": "hello"}}'
```
"""


def folder_document(category: str, name: str, script: str | None) -> str:
    """SKILL.md of a folder skill: frontmatter (name, description, tags, and the script's input schema)."""
    lines = [
        "---",
        f"name: {name}",
        f"description: {_quoted(placeholder_description(name))}",
        "tags: []  # TODO: a few words agents search by, e.g. [testing, playwright]",
    ]
    if script:
        lines += [
            "input_schema:  # TODO: the JSON the script reads from standard input",
            "  type: object",
            "  properties:",
            "    text: {type: string, description: 'TODO: what the script works on'}",
        ]
    lines += ["---", "", f"# {title_of(name)}", "", BODY]
    text = "\n".join(lines)
    if script:
        how = "reads a JSON object from standard input and prints a JSON object."
        text += _script_section(f"{category}/{name}", script, how)
    return text + VERIFICATION


def three_file_metadata(name: str) -> str:
    return (
        "---\n"
        f"description: {_quoted(placeholder_description(name))}\n"
        "tags: []  # TODO: a few words agents search by\n"
        "---\n"
    )


def three_file_document(category: str, name: str, code: str | None) -> str:
    text = f"# {title_of(name)}\n\n{BODY}"
    if code:
        entry = python_function(name) if code.endswith(".py") else javascript_function(name)
        how = f"holds the function `{entry}`, called with the JSON input; what it returns is the result."
        text += _script_section(f"{category}/{name}", code, how)
    return text + VERIFICATION


def python_function(name: str) -> str:
    """The function a three-file Python skill exposes (docs/tools.md): `retry-backoff` -> `retry_backoff`,
    or `run` when that is no identifier (a name starting with a digit)."""
    snake = name.replace("-", "_")
    return snake if snake.isidentifier() and not keyword.iskeyword(snake) else "run"


def javascript_function(name: str) -> str:
    head, *rest = name.split("-")
    camel = head + "".join(part.capitalize() for part in rest)
    return camel if camel.isidentifier() and not keyword.iskeyword(camel) else "run"


def implementation_text(kind: ScriptChoice, name: str) -> str:
    """A three-file skill's implementation: a function the runner calls with the JSON input."""
    if kind == "py":
        function = python_function(name)
        signature = f'{function}(text: str = "")' if function != "run" else "run(params: dict[str, object])"
        text = "text" if function != "run" else 'str(params.get("text", ""))'
        return f'''"""TODO: what {name} does. `skillshelf run` calls {function}() with the JSON input."""

from __future__ import annotations


def {signature} -> dict[str, object]:
    """TODO: replace this with the skill's work; the result must be JSON (dicts, lists, strings, numbers)."""
    given = {text}
    return {{"received": given, "length": len(given)}}
'''
    function = javascript_function(name)
    return f"""// TODO: what {name} does. `skillshelf run` calls {function}() with the JSON input.

function {function}(input) {{
  // TODO: replace this with the skill's work; the result must be JSON.
  const text = String(input?.text ?? "");
  return {{ received: text, length: text.length }};
}}

module.exports = {{ {function} }};
"""


def script_text(kind: ScriptChoice, name: str) -> str:
    """A folder skill's script: JSON object in on standard input, JSON object out on standard output."""
    if kind == "py":
        return f'''#!/usr/bin/env python3
"""TODO: what {name} does.

Reads a JSON object from standard input, e.g. {{"text": "hello"}}, and prints a JSON object.
"""

import json
import sys


def main() -> int:
    raw = sys.stdin.read().strip()
    try:
        params = json.loads(raw) if raw else {{}}
    except ValueError as exc:
        print(json.dumps({{"error": f"the input is not JSON: {{exc}}"}}))
        return 2
    text = str(params.get("text", ""))
    # TODO: replace this with the skill's work.
    print(json.dumps({{"received": text, "length": len(text)}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
    if kind == "sh":
        return f"""#!/bin/sh
# TODO: what {name} does.
# Reads a JSON object from standard input and prints a JSON object.
set -eu
input=$(cat)
[ -n "$input" ] || input='{{}}'
# TODO: replace this with the skill's work.
printf '{{"received": %s}}\\n' "$input"
"""
    return f"""#!/usr/bin/env node
// TODO: what {name} does.
// Reads a JSON object from standard input, e.g. {{"text": "hello"}}, and prints a JSON object.
let raw = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {{
  raw += chunk;
}});
process.stdin.on("end", () => {{
  let params;
  try {{
    params = raw.trim() ? JSON.parse(raw) : {{}};
  }} catch (error) {{
    console.log(JSON.stringify({{ error: `the input is not JSON: ${{error.message}}` }}));
    process.exitCode = 2;
    return;
  }}
  const text = String(params.text ?? "");
  // TODO: replace this with the skill's work.
  console.log(JSON.stringify({{ received: text, length: text.length }}));
}});
"""


# Each line of the scaffold's body that the curator must replace, as `skillshelf new` writes it.
_TODO_LINES = frozenset(line.strip() for line in (BODY + VERIFICATION).splitlines() if "TODO:" in line)


def eval_queries(name: str) -> str:
    """The trigger examples `skillshelf eval` runs (evals/eval_queries.json); each TODO query is skipped and
    reported by `eval` until it is replaced."""
    items = [
        (f"TODO: a request in a user's words that should pick {name}", True),
        (f"TODO: another way of asking for what {name} does", True),
        (f"TODO: a nearby request that another skill should answer, not {name}", False),
    ]
    lines = ",\n".join(f'  {{"query": "{query}", "should_trigger": {str(should).lower()}}}' for query, should in items)
    return f"[\n{lines}\n]\n"


def is_placeholder_description(description: str) -> bool:
    """True while a description is still the scaffold's own (what `doc` leaves out of its table)."""
    return description.strip().startswith(DESCRIPTION_START)


def scaffold_leftovers(description: str, body: str) -> list[str]:
    """What of the scaffold a skill still holds word for word: its placeholder description, its TODO lines.
    Only the scaffold's own text counts, so a TODO a curator wrote on purpose is never reported."""
    left = ["the description"] if is_placeholder_description(description) else []
    lines = sum(1 for line in body.splitlines() if line.strip() in _TODO_LINES)
    if lines:
        left.append(f"{lines} TODO line{'' if lines == 1 else 's'} of the body")
    return left
