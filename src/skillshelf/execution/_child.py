"""The first code that runs in a skill's process (standard library only; it is started as a script).

It closes every file descriptor it inherited beyond 0-2 (uvloop, the server's event loop, does not
close them when it starts a process: a skill got the HTTP listener), joins the run's cgroups when
there are any, applies the resource limits, then runs the
skill: calls a three-file skill's function with the JSON input (`call`), runs a Python script in
this same process (`script`), or replaces itself with another interpreter (`exec`). Setting limits
here rather than in a `preexec_fn` keeps the server's own fork free of Python code, which is not
safe while the server runs threads.
"""

import contextlib
import importlib.machinery
import importlib.util
import json
import os
import runpy
import sys
import traceback
from typing import Any, TextIO

EXIT_SETUP_FAILED = 125


def close_inherited_fds() -> None:
    """Close every fd above 2: a skill sees its stdin, stdout and stderr and nothing of the server."""
    if os.name != "posix":
        return
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd")]
    except (OSError, ValueError):
        os.closerange(3, 65536)
        return
    for fd in fds:
        if fd > 2:
            with contextlib.suppress(OSError):  # the listing's own descriptor, already closed
                os.close(fd)


def apply_limits(limits: dict[str, Any]) -> None:
    try:
        import resource
    except ImportError:  # Windows: no rlimits; only the timeout and output caps apply
        return
    pairs = [
        ("RLIMIT_CPU", limits.get("cpu_s"), 1),
        ("RLIMIT_AS", limits.get("memory_bytes"), 0),
        ("RLIMIT_NPROC", limits.get("nproc"), 0),
        ("RLIMIT_FSIZE", limits.get("fsize_bytes"), 0),
        ("RLIMIT_CORE", 0, 0),
    ]
    for name, value, hard_extra in pairs:
        kind = getattr(resource, name, None)
        if kind is None or value is None:
            continue
        _soft, hard = resource.getrlimit(kind)
        wanted = value + hard_extra
        if hard != resource.RLIM_INFINITY:
            wanted = min(wanted, hard)
        resource.setrlimit(kind, (min(value, wanted), wanted))


def join_cgroups(procs_files: list[str]) -> None:
    for procs_file in procs_files:
        with open(procs_file, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles a module from its source, never from a `__pycache__` file beside it: no approval covers
    those (the skill's digest leaves `__pycache__` out), so a planted one would run unreviewed bytes."""

    def path_stats(self, path: str) -> Any:
        raise OSError("a skill's modules are compiled from their source")  # SourceLoader then skips the cache


def source_only_under(folder: str) -> None:
    """Modules imported from `folder` (the skill's) and below load through SourceOnlyLoader; others (the
    standard library, installed packages) keep their caches."""
    folder = os.path.realpath(folder)
    loaders = (
        (SourceOnlyLoader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
    )

    def hook(path: str) -> importlib.machinery.FileFinder:
        real = os.path.realpath(path or os.getcwd())
        if not os.path.isdir(real) or (real != folder and not real.startswith(folder + os.sep)):
            raise ImportError("not a folder of the skill's")  # the next hook (the default) takes it
        return importlib.machinery.FileFinder(path, *loaders)

    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()


def call_function(config: dict[str, Any]) -> int:
    """Import the skill file, call its function with the input, print {"result": ...} as JSON."""
    real_stdout = sys.stdout
    payload = json.loads(sys.stdin.read() or "{}")
    skill_path = config["skill_path"]
    # Its folder is not put on the import path: it is a category's, shared with files no approval of this
    # skill covers (a planted `json.py` there would shadow the standard library's); the sandbox shows the
    # skill's own files only, and this keeps a run without it the same.
    sys.stdout = sys.stderr  # the skill's own prints must not corrupt the JSON result
    try:
        loader = SourceOnlyLoader("skill", skill_path)
        spec = importlib.util.spec_from_file_location("skill", skill_path, loader=loader)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {config.get('display_name', 'the skill')}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        function = getattr(module, config["function"])
        result = function(**payload) if config["call_style"] == "kwargs" else function(payload)
    except BaseException as exc:  # everything the skill raises is its failure, reported as data
        if isinstance(exc, SystemExit) and not exc.code:
            result = None
        else:
            report_failure(real_stdout, exc, skill_path, config.get("display_name", "skill.py"))
            return 1
    finally:
        sys.stdout = real_stdout
    real_stdout.write(json.dumps({"result": result}, default=str, ensure_ascii=False))
    real_stdout.flush()
    return 0


def report_failure(stream: TextIO, exc: BaseException, skill_path: str, display_name: str) -> None:
    """The exception with only the skill's own frames, named relative to the library."""
    frames = [
        f'File "{display_name}", line {frame.lineno}, in {frame.name}'
        for frame in traceback.extract_tb(exc.__traceback__)
        if os.path.abspath(frame.filename) == os.path.abspath(skill_path)
    ]
    error = {"type": type(exc).__name__, "message": str(exc)[:2000], "frames": frames[-10:]}
    stream.write(json.dumps({"error": error}, ensure_ascii=False))
    stream.flush()


def main() -> int:
    close_inherited_fds()
    config = json.loads(sys.argv[1])
    try:
        join_cgroups(config.get("cgroup_procs") or [])
        apply_limits(config["limits"])
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"skillshelf: could not apply the execution limits: {exc}\n")
        return EXIT_SETUP_FAILED
    mode = config["mode"]
    if config.get("skill_dir"):
        source_only_under(config["skill_dir"])
    if mode == "call":
        return call_function(config)
    if mode == "script":
        sys.argv = list(config["argv"])
        sys.path.insert(0, os.path.dirname(config["argv"][0]))
        runpy.run_path(config["argv"][0], run_name="__main__")
        return 0
    os.execv(config["argv"][0], config["argv"])  # mode "exec": never returns
    return EXIT_SETUP_FAILED


if __name__ == "__main__":
    sys.exit(main())
