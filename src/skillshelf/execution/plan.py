"""What running a skill means: which interpreter, which entry point, which input schema.

Only files the skill owns can run: a three-file skill's implementation, or a file under its
own `scripts/` folder that resolves there (no `..`, no symlink leading out). Commands are argument
lists, never shell strings.
"""

from __future__ import annotations

import posixpath
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.execution.policy import declared_policy
from skillshelf.execution.schema import camel_name, derive_python_schema, function_name
from skillshelf.library import children
from skillshelf.library.access.files import SkillFileError
from skillshelf.library.access.reader import FileReader
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.skill.paths import is_within
from skillshelf.library.skill.policy import SkillPolicy

CHILD = Path(__file__).with_name("_child.py")
CHILD_JS = Path(__file__).with_name("_child_js.mjs")
SCRIPT_INTERPRETERS = {".py": "python", ".sh": "sh", ".bash": "bash", ".js": "node", ".mjs": "node", ".cjs": "node"}
SHEBANG = re.compile(r"^#!\s*(\S+)(?:\s+(\S+))?")
KNOWN_INTERPRETERS = frozenset({"python", "python3", "sh", "bash", "node"})
TYPESCRIPT_NODE = (22, 6)  # type stripping (--experimental-strip-types) arrived in Node 22.6

ChildMode = Literal["call", "script", "exec"]


@dataclass(frozen=True)
class RunPlan:
    skill_id: str
    interpreter: str  # python, node, sh, bash
    entry: str
    mode: ChildMode
    skill_dir: Path
    target: Path  # the implementation or script that runs
    function: str | None = None
    call_style: Literal["kwargs", "dict"] = "dict"
    input_schema: dict[str, Any] | None = None
    schema_source: Literal["declared", "derived"] | None = None
    files: tuple[Path, ...] = ()  # what the skill owns: all a sandboxed run sees of the library
    args: tuple[str, ...] = ()  # command-line arguments for a script
    policy: SkillPolicy = field(default_factory=SkillPolicy)  # frontmatter `policy:`: what a run needs
    served: str = ""  # `target` relative to `skill_dir`, as the skill serves it: where it is in a copy

    def in_copy(self, folder: Path) -> RunPlan:
        """This plan run from a copy of the skill's files whose skill folder is `folder`: the one place that says
        where the skill lives, so every path the child gets (its config, SKILLSHELF_SKILL_DIR, the sandbox's binds,
        the import path) is the copy's. The copy holds the skill's own files only (a three-file skill's three)."""
        return replace(self, skill_dir=folder, target=folder.joinpath(*self.served.split("/")), files=(folder,))

    def child_config(
        self, limits: dict[str, int | None], cgroup_procs: list[str] | None, node_heap_mb: int | None = None
    ) -> dict[str, Any]:
        """The `_child.py` configuration: how to run `target` once limits are in place."""
        config: dict[str, Any] = {"mode": self.mode, "limits": limits, "cgroup_procs": cgroup_procs}
        config["skill_dir"] = str(self.skill_dir)  # its modules run from their source (_child.py)
        if self.mode == "call":
            config |= {"skill_path": str(self.target), "function": self.function, "call_style": self.call_style}
            config["display_name"] = self.target.name
        elif self.mode == "script":
            config["argv"] = [str(self.target), *self.args]
        else:
            config["argv"] = self.exec_argv(node_heap_mb)
        return config

    def exec_argv(self, node_heap_mb: int | None = None) -> list[str]:
        binary = _which(self.interpreter)
        if self.interpreter == "node":
            # V8 reserves far more address space than it uses, so RLIMIT_AS would break Node:
            # its heap is capped with its own flag instead.
            node_flags = [f"--max-old-space-size={node_heap_mb}"] if node_heap_mb else []
            if self.target.suffix == ".ts":
                node_flags.append("--experimental-strip-types")
            if self.function is not None:  # a three-file JavaScript skill: call its function
                names = ",".join(dict.fromkeys([self.function, camel_name(self.skill_id.split("/")[-1]), "run"]))
                return [binary, *node_flags, "--", str(CHILD_JS), str(self.target), names, self.target.name]
            return [binary, *node_flags, "--", str(self.target), *self.args]
        return [binary, "--", str(self.target), *self.args]

    def argv(self, config_json: str) -> list[str]:
        # -B: the skill's imports write no __pycache__ into the library (isolated mode ignores
        # PYTHONDONTWRITEBYTECODE, so it takes the flag).
        return [sys.executable, "-I", "-B", "-X", "utf8", "--", str(CHILD), config_json]

    def binaries(self) -> list[str]:
        """The interpreters this run starts (their installations must be visible in a sandbox)."""
        return [sys.executable, _which(self.interpreter) if self.interpreter != "python" else ""]

    def exposed(self) -> list[Path]:
        """Read-only in a sandbox: the skill's own files and skillshelf's child-side code."""
        return [*self.files, CHILD, CHILD_JS]


MAX_ARGS = 64
MAX_ARG_CHARS = 4096
NAME_MAX_BYTES = 255  # the longest file name most file systems take (ext4, xfs, btrfs, APFS, NTFS)
SCRIPT_MAX_BYTES = 1024  # far beyond any real scripts/ path, far below PATH_MAX


def plan_for(skill: IndexedSkill, reader: FileReader, script: str | None, args: list[str] | None = None) -> RunPlan:
    """How the skill runs; its files are found and read through `reader` (the same rules as every read)."""
    declared = skill.details.input_schema
    policy = declared_policy(skill.id, skill.details.frontmatter)  # an unreadable policy: nothing runs
    if skill.layout == "three-file":
        if script is not None or args:
            given = "script" if script is not None else "args"
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"{skill.id!r} is a three-file skill: it runs its implementation with the JSON input and takes no "
                f"`{given}`. Call it again without `{given}`.",
            )
        return replace(_three_file_plan(skill, reader, declared), policy=policy)
    _check_args(args or [])
    plan = _script_plan(skill, reader, script, declared)
    return replace(plan, args=tuple(args or ()), policy=policy)


def _check_args(args: list[str]) -> None:
    if len(args) > MAX_ARGS or any(len(arg) > MAX_ARG_CHARS or "\0" in arg for arg in args):
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"args: at most {MAX_ARGS} arguments of at most {MAX_ARG_CHARS} characters each, without NUL bytes",
        )


def _not_executable(skill_id: str, reason: str) -> SkillshelfError:
    return SkillshelfError(ErrorCode.NOT_EXECUTABLE, f"{skill_id!r} cannot run: {reason}")


def _three_file_plan(skill: IndexedSkill, reader: FileReader, declared: dict[str, Any] | None) -> RunPlan:
    code_file = skill.details.code_file
    if not code_file:
        raise _not_executable(
            skill.id, "it has no implementation (.py, .js or .ts beside its .md). Read it with loadSkill."
        )
    code_name = Path(code_file).name
    try:
        target = reader.locate(skill, code_name)
    except SkillFileError:
        raise SkillshelfError(
            ErrorCode.ACCESS_DENIED, f"{skill.id!r}: its implementation resolves outside the library"
        ) from None
    assert target is not None  # only SKILL.md is generated
    skill_name = skill.id.split("/", 1)[1]
    owned = [Path(name).name for name in (code_file, skill.details.doc_file, skill.details.meta_file) if name]
    files = tuple(path for path in (_located(reader, skill, name) for name in owned) if path is not None)
    if target.suffix == ".py":
        source = reader.read_text(skill, code_name) or ""
        derived, entry = derive_python_schema(source, skill_name)
        if entry is None:
            raise _not_executable(
                skill.id, f"{target.name} defines neither {function_name(skill_name)}() nor run(input)"
            )
        kwargs = entry != "run"
        return RunPlan(
            skill_id=skill.id,
            interpreter="python",
            entry=f"{entry}(**input)" if kwargs else "run(input)",
            mode="call",
            skill_dir=target.parent,
            target=target,
            function=entry,
            call_style="kwargs" if kwargs else "dict",
            input_schema=declared or derived,
            schema_source="declared" if declared else ("derived" if derived else None),
            files=files,
            served=code_name,
        )
    _require_node(skill.id, typescript=target.suffix == ".ts")
    return RunPlan(
        skill_id=skill.id,
        interpreter="node",
        entry=f"{function_name(skill_name)}(input)",
        mode="exec",
        skill_dir=target.parent,
        target=target,
        function=function_name(skill_name),
        input_schema=declared,
        schema_source="declared" if declared else None,
        files=files,
        served=code_name,
    )


def _script_plan(
    skill: IndexedSkill, reader: FileReader, script: str | None, declared: dict[str, Any] | None
) -> RunPlan:
    skill_dir = reader.folder_of(skill)
    scripts = [r for r in skill.details.resources if r.startswith("scripts/")]
    if not scripts:
        raise _not_executable(skill.id, "it has no scripts/ folder. Read it with loadSkill and follow its steps.")
    chosen = _choose_script(skill.id, scripts, script, skill_dir)
    target = _located(reader, skill, chosen)
    if target is None or not is_within(target, (skill_dir / "scripts").resolve()):
        raise SkillshelfError(ErrorCode.ACCESS_DENIED, f"{chosen!r} resolves outside {skill.id}/scripts/; refused")
    interpreter = _script_interpreter(skill.id, target, reader.read_text(skill, chosen, 256) or "")
    return RunPlan(
        skill_id=skill.id,
        interpreter=interpreter,
        entry=chosen,
        mode="script" if interpreter == "python" else "exec",
        skill_dir=skill_dir,
        target=target,
        input_schema=declared,
        schema_source="declared" if declared else None,
        files=(skill_dir,),
        served=chosen,
    )


def _located(reader: FileReader, skill: IndexedSkill, served: str) -> Path | None:
    """The file behind a served path when every read rule holds, else None."""
    try:
        return reader.locate(skill, served)
    except SkillFileError:
        return None


def _choose_script(skill_id: str, scripts: list[str], script: str | None, skill_dir: Path) -> str:
    if script is None:
        if len(scripts) == 1:
            return scripts[0]
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"{skill_id!r} has several scripts; pass script as one of: {', '.join(scripts)}",
            suggestions=scripts[:10],
        )
    given = script.replace("\\", "/")
    _check_script_name(script, given)
    if given.startswith("/") or re.match(r"^[A-Za-z]:", given):
        raise SkillshelfError(
            ErrorCode.ACCESS_DENIED,
            f"script {script!r} is an absolute path; refused. Name one of {skill_id}'s scripts, e.g. {scripts[0]!r}",
        )
    wanted = posixpath.normpath(given)
    if not wanted.startswith("scripts/"):
        wanted = posixpath.normpath(f"scripts/{wanted}")
    if ".." in wanted.split("/") or wanted.startswith("/") or not wanted.startswith("scripts/"):
        raise SkillshelfError(ErrorCode.ACCESS_DENIED, f"script {script!r} is outside {skill_id}/scripts/; refused")
    # The index leaves out links that lead out of the skill: say why it cannot run, not "no such script".
    link = skill_dir / wanted
    if wanted not in scripts and link.is_symlink() and not is_within(link, (skill_dir / "scripts").resolve()):
        raise SkillshelfError(ErrorCode.ACCESS_DENIED, f"{wanted!r} resolves outside {skill_id}/scripts/; refused")
    if wanted not in scripts:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"{skill_id!r} has no script {script!r}; its scripts: {', '.join(scripts)}",
            suggestions=scripts[:10],
        )
    return wanted


def _check_script_name(script: str, given: str) -> None:
    """Refuse a name no file system could hold, before asking one (which fails with ENAMETOOLONG)."""
    size = len(given.encode("utf-8", "surrogatepass"))
    too_long = [part for part in given.split("/") if len(part.encode("utf-8", "surrogatepass")) > NAME_MAX_BYTES]
    if "\0" in given:
        problem = "contains a NUL byte"
    elif size > SCRIPT_MAX_BYTES:
        problem = f"is {size} bytes long (at most {SCRIPT_MAX_BYTES})"
    elif too_long:
        problem = f"has a path component over {NAME_MAX_BYTES} bytes"
    else:
        return
    shown = script[:80] + ("..." if len(script) > 80 else "")
    raise SkillshelfError(
        ErrorCode.VALIDATION_ERROR,
        f"script {shown!r} {problem}; name one of the skill's scripts, e.g. 'scripts/check.py'",
    )


def _script_interpreter(skill_id: str, target: Path, head: str) -> str:
    interpreter = SCRIPT_INTERPRETERS.get(target.suffix)
    if interpreter is None:
        interpreter = _shebang_interpreter(head)
    if interpreter is None:
        raise _not_executable(
            skill_id, f"no known interpreter for {target.name} (use .py, .sh, .js or a #! line naming python, sh, "
            "bash or node)"
        )  # fmt: skip
    if interpreter == "node":
        _require_node(skill_id, typescript=False)
    elif interpreter != "python" and _which(interpreter) == "":
        raise _not_executable(skill_id, f"{interpreter} is not on PATH")
    return interpreter


def _shebang_interpreter(head: str) -> str | None:
    """The interpreter a `#!` first line names, when it is one skillshelf knows."""
    first = head.split("\n", 1)[0]
    match = SHEBANG.match(first)
    if not match:
        return None
    program = Path(match.group(1)).name
    if program == "env" and match.group(2):
        program = match.group(2)
    program = "python" if program.startswith("python") else program
    return program if program in KNOWN_INTERPRETERS else None


def _which(name: str) -> str:
    return shutil.which(name) or ""


def _require_node(skill_id: str, *, typescript: bool) -> None:
    version = _node_version()
    if version is None:
        raise _not_executable(skill_id, "it is JavaScript and `node` is not on PATH")
    if typescript and version < TYPESCRIPT_NODE:
        found = ".".join(map(str, version))
        raise _not_executable(skill_id, f"TypeScript needs Node 22.6+ (type stripping); found Node {found}")


@lru_cache(maxsize=1)
def _node_version() -> tuple[int, ...] | None:
    binary = shutil.which("node")
    if binary is None:
        return None
    try:
        text = children.run([binary, "--version"], timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    numbers = re.findall(r"\d+", text)
    return tuple(int(n) for n in numbers[:3]) if numbers else None
