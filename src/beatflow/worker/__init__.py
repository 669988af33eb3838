"""Warm workers: long-lived processes of a local Snakemake run that run its jobs' stages, so that imports, the
CUDA context and the kernels' first calls are paid once per run, not once per job. Every stage still writes
its own artifact, so Snakemake's caching and reruns are unchanged.

``session`` is the Snakefile's side (whether a run uses them; ``onstart`` starts the ``server``, a thread of
Snakemake's own process that keeps a pool of ``process`` workers per ``groups`` entry), ``client`` the rule
script's. A run is one Snakemake process and an unguessable token (:class:`Run`): the server listens on one
Unix socket in the run's directory, which only this user can enter (mode 0700), and a client must prove it
holds the token before it is heard, and the server before it gets a job (``multiprocessing.connection``'s
authkey). Workers die with Snakemake (their pipe to it closes). Nothing here is imported where workers are off.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from beatflow.stage import WORKER_RUN_ENV


@dataclass(frozen=True)
class Run:
    """The Snakemake run (``owner``: its pid) whose jobs the workers serve."""

    owner: int
    token: str

    @classmethod
    def current(cls) -> Run | None:
        """This process's run, from ``BEATFLOW_WORKER_RUN`` (``owner:token``); None when jobs run in-process."""
        owner, _, token = os.environ.get(WORKER_RUN_ENV, "").partition(":")
        return cls(int(owner), token) if owner.isdigit() and len(token) >= 32 else None

    def environment(self) -> str:
        return f"{self.owner}:{self.token}"

    @property
    def directory(self) -> Path:
        """The run's socket directory, relative to the working directory (short enough for a socket's name)."""
        return Path(".snakemake", "beatflow", f"run-{self.owner}-{self.token[:16]}")

    @property
    def address(self) -> str:
        return str(self.directory / "server")

    @property
    def log_path(self) -> Path:
        """The workers' own log (start-up, ends, crashes); each job logs to its rule's log file."""
        return Path(".snakemake", "beatflow", f"workers-{self.owner}-{self.token[:8]}.log")

    def private_directory(self) -> Path:
        """:attr:`directory`, created mode 0700 where absent. Raises PermissionError unless it is a directory of
        this user that no other user can enter."""
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            self.directory.mkdir(mode=0o700)
        found = os.lstat(self.directory)
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
            raise PermissionError(
                f"the warm workers' directory {self.directory} is not a directory of this user with mode 0700: "
                "no job goes to a worker there; running the job here"
            )
        return self.directory

    def remove(self) -> None:
        """Remove the run's socket and directory (its end)."""
        with contextlib.suppress(OSError):
            os.unlink(self.address)
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)
