"""A throwaway PostgreSQL cluster for the tests: `initdb` in a temporary folder, started on a free
port with its socket in that folder too, as the `postgres` user when the tests run as root (initdb
refuses root). `PostgresCluster.find()` says why none can be started (no binaries, no user to run
them as), for the tests to skip with that reason."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.conftest import deadline

SEARCH = ("/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin", "/opt/homebrew/bin", "/usr/local/bin")
SUPERUSER = "skillshelf"


def find_binaries() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, or Debian's versioned folder (newest first)."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    for pattern in SEARCH:
        root, _, glob = pattern.rpartition("/*/")
        candidates = sorted(Path(root).glob(f"*/{glob}"), reverse=True) if glob else [Path(pattern)]
        for folder in candidates:
            if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
                return folder
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresCluster:
    bin_dir: Path
    folder: Path
    port: int
    run_as: str | None  # the user the server runs as when the tests run as root

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if find_binaries() is None:
            return "PostgreSQL's initdb/pg_ctl are not installed (Debian: apt-get install postgresql)"
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and there is no `postgres` user to run initdb as"
        return None

    @classmethod
    def create(cls, template: Path | None = None) -> PostgresCluster:
        """A new cluster in a new folder of the system's temporary folder (which the `postgres` user can
        reach, unlike pytest's root-only one); `remove` deletes it. Its data folder is a copy of `template`
        (`initdb_template`'s, never started) when given: the same files `initdb` writes, in a tenth of its time."""
        bin_dir = find_binaries()
        assert bin_dir is not None
        run_as = "postgres" if os.geteuid() == 0 else None
        folder = Path(tempfile.mkdtemp(prefix="skillshelf-pg-"))
        if run_as:
            shutil.chown(folder, run_as)
        cluster = cls(bin_dir, folder, free_port(), run_as)
        if template is None:
            cluster._run(["initdb", "-D", str(cluster.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync"])
        else:
            shutil.copytree(template, cluster.data, symlinks=True)  # with each file's mode (the data folder's 0700)
            if run_as:
                for path in (cluster.data, *cluster.data.rglob("*")):  # (no links in a new data folder)
                    shutil.chown(path, run_as, run_as)
        return cluster

    @classmethod
    def initdb_template(cls, target: Path) -> None:
        """A data folder `initdb` wrote, at `target` (which `create(template=target)` copies)."""
        cluster = cls.create()
        try:
            shutil.move(cluster.data, target)
        finally:
            cluster.remove()

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, dbname: str = "postgres", password: str | None = None) -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{SUPERUSER}{secret}@127.0.0.1:{self.port}/{dbname}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        timeout = str(int(deadline()))
        log = str(self.folder / "log")
        self._run(["pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "-t", timeout, "start"])

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def stop(self) -> None:
        self._run(["pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", str(int(deadline())), "stop"])

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.url(), autocommit=True)

    def create_database(self, name: str) -> str:
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"'.encode())
        return self.url(name)

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())

    def _run(self, command: Sequence[str]) -> None:
        argv = [str(self.bin_dir / command[0]), *command[1:]]
        if self.run_as:
            argv = ["runuser", "-u", self.run_as, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=deadline(), check=False)
        if done.returncode != 0:
            log = self.folder / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(command[:1])} failed ({done.returncode}): {done.stderr}{done.stdout}{tail}")
