"""Warm workers: processes of a local Snakemake run that run its jobs' stages, so that imports, the CUDA context
and the kernels' first calls are paid once per run. ``server`` (threads of Snakemake's process) keeps a pool of
``process`` workers per group (``groups``) and gives each rule script's job (``client``) to one. A run is a
Snakemake process and an unguessable token (:class:`Run`): the server listens on one Unix socket in a directory
only this user can enter (0700), and each end must prove it holds the token (``multiprocessing.connection``'s
authkey). Nothing here is imported where workers are off."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from beatflow.stage import WORKER_RUN_ENV


class Run:
    """The Snakemake run (``owner``: its pid) whose jobs the workers serve; paths relative to the working
    directory (short enough for a socket's name); ``log_path``: the workers' own log (start, end, crashes)."""

    def __init__(self, owner: int, token: str):
        self.owner, self.token, self.environment = owner, token, f"{owner}:{token}"
        self.directory = Path(".snakemake", "beatflow", f"run-{owner}-{token[:16]}")
        self.address = str(self.directory / "server")
        self.log_path = Path(".snakemake", "beatflow", f"workers-{owner}-{token[:8]}.log")

    @classmethod
    def current(cls) -> Run | None:
        """This process's run, from ``BEATFLOW_WORKER_RUN`` (``owner:token``); None when jobs run in-process."""
        owner, _, token = os.environ.get(WORKER_RUN_ENV, "").partition(":")
        return cls(int(owner), token) if owner.isdigit() and len(token) >= 32 else None

    def private_directory(self) -> Path:
        """:attr:`directory`, created mode 0700 where absent; PermissionError unless no other user can enter it."""
        with contextlib.suppress(FileExistsError):
            self.directory.parent.mkdir(parents=True, exist_ok=True)
            self.directory.mkdir(mode=0o700)
        found = os.lstat(self.directory)
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
            raise PermissionError(
                f"the warm workers' directory {self.directory} is not a directory of this user with mode 0700: "
                "no job goes to a worker there; running the job here"
            )
        return self.directory

    def remove(self) -> None:
        """The run's end: its socket and directory go."""
        for remove, path in ((os.unlink, self.address), (os.rmdir, self.directory)):
            with contextlib.suppress(OSError):
                remove(path)
