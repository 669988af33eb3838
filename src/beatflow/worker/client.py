"""The rule script's side of the warm workers (:func:`submit`): hand the job to this run's server, echo the
rule's log while a worker runs it, and return its outcome; where no worker ran it (none answers, the run's
directory is not private, or the worker died), say why, so that the script runs the job itself."""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import AuthenticationError, Client
from pathlib import Path

from beatflow.worker import Run
from beatflow.worker.groups import group_of

PASSED_ENV = ("TMPDIR", "TMP", "TEMP")  # with BEATFLOW_*: the client's values hold in the worker during its job
POLL_S = 0.1


def submit(smk, main, age_s: float, device: str | None = None) -> tuple[bool | None, str | None]:
    """Run the job in a warm worker of this run: its outcome, or None and why the script must run it itself.

    Parameters
    ----------
    smk, main : as for :func:`beatflow.stage.run`; the worker runs the rule's script, ``<rule>.py`` in
        ``smk.scriptdir``.
    age_s : this process's age, for the job's start line.
    device : the GPU the job holds (:mod:`beatflow.gpus`), whose workers it goes to.
    """
    run = Run.current()
    if run is None:
        return None, None
    try:
        run.private_directory()
        conn = Client(run.address, "AF_UNIX", authkey=run.token.encode())
    except PermissionError as exc:
        return None, str(exc)
    except (OSError, EOFError, AuthenticationError) as exc:
        return None, f"no warm worker of this run answers at {run.address} ({exc}); running the job here"
    env = {k: v for k, v in os.environ.items() if k.startswith("BEATFLOW_") or k in PASSED_ENV}
    script = str(Path(smk.scriptdir, f"{smk.rule}.py"))
    request = {"smk": smk, "script": script, "group": group_of(main), "device": device, "env": env}
    with conn:
        conn.send({**request, "pid": os.getpid(), "age": age_s})
        reply = _follow(conn, smk.log[0] if smk.log else None)
    if reply is None:  # the server is a thread of Snakemake: it is gone, and the job must not run again
        print("the warm worker stopped the job: its Snakemake process is gone", file=sys.stderr)
        return False, None
    return reply["ok"], reply.get("note")


def _follow(conn, log: str | None) -> dict | None:
    """The server's reply (None when it is gone), echoing the rule's log meanwhile."""
    shown = 0
    while True:
        ended = conn.poll(POLL_S)
        if log is not None:
            with open(log, "rb") as lines:
                lines.seek(shown)
                text = lines.read()
            shown += len(text)
            sys.stderr.write(text.decode(errors="replace"))
            sys.stderr.flush()
        if ended:
            try:
                return conn.recv()
            except (EOFError, OSError):
                return None
