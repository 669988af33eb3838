"""The rule script's side of the warm workers."""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import AuthenticationError, Client
from pathlib import Path

from beatflow.worker import Run
from beatflow.worker.groups import group_of


def submit(smk, main, age_s: float, device: str | None = None) -> tuple[bool | None, str | None]:
    """Run the job in a warm worker of this run: its outcome, or None and why the script must run it itself.

    Parameters
    ----------
    smk, main : as for :func:`beatflow.stage.run`; the worker runs ``<rule>.py`` in ``smk.scriptdir``.
    age_s : this process's age, for the job's start line.
    device : the GPU the job holds (:mod:`beatflow.gpus`), whose workers it goes to.
    """
    if (run := Run.current()) is None:
        return None, None
    try:
        run.private_directory()
        conn = Client(run.address, "AF_UNIX", authkey=run.token.encode())
    except (OSError, EOFError, AuthenticationError) as exc:  # PermissionError: the run's directory not private
        return None, f"no warm worker of this run answers at {run.address} ({exc}); running the job here"
    env = {k: v for k, v in os.environ.items() if k.startswith("BEATFLOW_") or k in ("TMPDIR", "TMP", "TEMP")}
    script, shown, ended = str(Path(smk.scriptdir, f"{smk.rule}.py")), 0, False
    with conn:
        conn.send(
            {"smk": smk, "script": script, "group": group_of(main), "device": device, "env": env}
            | {"pid": os.getpid(), "age": age_s}
        )
        while not ended:
            ended = conn.poll(0.1)
            if smk.log:  # the job's log lines, where Snakemake shows the job's stderr
                with open(smk.log[0], "rb") as log:
                    log.seek(shown)
                    sys.stderr.write((text := log.read()).decode(errors="replace"))
                    shown += len(text)
        try:
            reply = conn.recv()
        except (EOFError, OSError):  # the server, a thread of Snakemake, is gone: the job must not run again
            print("the warm worker stopped the job: its Snakemake process is gone", file=sys.stderr)
            return False, None
    return reply["ok"], reply.get("note")
