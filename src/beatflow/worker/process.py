"""A warm worker: ``python -m beatflow.worker.process FD``, started by the run's server
(:mod:`beatflow.worker.server`) with its end of a pipe as FD; its group, the run's config and whether it warms
up arrive as the pipe's first message (never on a command line, which other users can read). It loads its
group's libraries (:func:`~beatflow.worker.groups.preload`), says ``ready``, then runs one job at a time: the
rule's own script, whose ``main`` it calls through :func:`beatflow.stage.execute`, in the client's
``BEATFLOW_*`` and temporary-directory environment, with BLAS, OpenMP and torch threads capped at the rule's
``threads``. A reader thread takes the server's messages: a ``cancel`` (the job's client is gone) or the pipe's
end (Snakemake is gone) during a job makes the worker exit at once (status :data:`EXIT_ABANDONED`), so a
cancelled job never renames an artifact into place after its run is gone. It retires after its group's
``max_jobs``, above its ``max_rss_mb`` or after an unexpected error (a CUDA fault can poison the process)."""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import queue
import resource
import runpy
import sys
import threading
import time
from multiprocessing.connection import Connection

from beatflow.stage import LOADED, execute
from beatflow.worker import Run
from beatflow.worker.client import PASSED_ENV
from beatflow.worker.groups import GROUPS, preload

EXIT_ABANDONED = 75
log = logging.getLogger("beatflow")


def listen(conn: Connection, jobs: queue.Queue, current: list, run: Run) -> None:
    """The reader thread: queue each job; end the job and the process when its client or Snakemake goes."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            message = None
        if message is not None and message != "cancel":
            current[:] = [message["smk"]]
            jobs.put(message)
            continue
        if current:
            why = "its client is gone (Snakemake cancelled the job)" if message else "its Snakemake process is gone"
            smk = current[0]
            os.write(2, f"{smk.rule} {smk.wildcards.get('record', '')}: {why}: job stopped; worker exits\n".encode())
            os._exit(EXIT_ABANDONED)
        if message is None:
            run.remove()  # Snakemake was killed: nobody else removes them
            jobs.put(None)
            return


def main(argv: list[str] | None = None) -> None:
    conn = Connection(int((argv or sys.argv[1:])[0]))
    setup = conn.recv()
    name, run, config = setup["group"], setup["run"], setup["config"]
    group = GROUPS[name]
    faulthandler.enable()
    os.nice(group.niceness)
    jobs: queue.Queue = queue.Queue()
    current: list = []
    threading.Thread(target=listen, args=(conn, jobs, current, run), daemon=True).start()
    t0 = time.perf_counter()
    backend, seconds = preload(name, config, setup["warm"])
    steps = ", ".join(f"{step.replace('_', '-')} {s:.2f} s" for step, s in seconds.items())
    print(
        f"warm worker pid {os.getpid()} for Snakemake {run.owner}: group {setup['slot']} #{setup['index']}, "
        f"backend {backend}, ready in {time.perf_counter() - t0:.2f} s ({steps})",
        file=sys.stderr,
        flush=True,
    )
    conn.send("ready")
    where = f"; warm worker {os.getpid()}" + (f" on GPU device {setup['device']}" if setup["device"] else "")
    done = 0
    while (request := jobs.get()) is not None:
        done += 1
        ok, healthy = run_job(request, f"{where}, its job {done}")
        release_memory()
        retire = retirement(group, healthy, done)
        current.clear()
        conn.send({"ok": ok, "retire": retire})
        if retire:
            smk = request["smk"]
            print(f"retiring after {smk.rule} {smk.wildcards.get('record', '')}: {retire}", file=sys.stderr, flush=True)
            return
    print("its Snakemake process ended: exiting", file=sys.stderr)


def run_job(request: dict, where: str) -> tuple[bool, bool]:
    """Run one job's script; whether the job succeeded, and whether the worker is still sound."""
    smk = request["smk"]
    _use_environment(request["env"])
    cpu0, modules0 = _cpu_s(), len(sys.modules)
    try:
        main = runpy.run_path(request["script"], init_globals={"snakemake": smk}, run_name=LOADED)["main"]
        with _thread_limit(smk.threads):
            ok = execute(smk, main, client=(request["pid"], request["age"]), where=where)
        log.info(
            "%s %s: the warm worker used %.2f s of CPU and imported %d modules, resident memory %.0f MB "
            "(the rule's benchmark file measures its script, which handed the job over)",
            *(smk.rule, smk.wildcards.get("record", ""), _cpu_s() - cpu0, len(sys.modules) - modules0, resident_mb()),
        )
        return ok, True
    except Exception:
        log.exception("%s failed in the warm worker", smk.rule)
        return False, False
    finally:
        logging.basicConfig(handlers=[logging.StreamHandler(sys.stderr)], force=True)


def retirement(group, healthy: bool, done: int) -> str:
    """Why the worker retires now, or "" when it serves on."""
    if not healthy:
        return "an unexpected error"
    if done >= group.max_jobs:
        return f"{done} jobs"
    if (rss_mb := resident_mb()) > group.max_rss_mb:
        return f"resident memory {rss_mb:.0f} MB above {group.max_rss_mb} MB"
    return ""


def release_memory() -> None:
    """A full garbage collection, and the device memory cached by CuPy's and torch's pools given back to the
    driver, so that an idle worker holds little more than its CUDA context."""
    import gc

    gc.collect()
    if "cupy" in sys.modules:
        sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _use_environment(env: dict[str, str]) -> None:
    """The client's ``BEATFLOW_*`` variables (``BEATFLOW_DEVICE`` overrides the config's device) and temporary
    directory."""
    import tempfile

    for name in [n for n in os.environ if (n.startswith("BEATFLOW_") or n in PASSED_ENV) and n not in env]:
        del os.environ[name]
    os.environ.update(env)
    tempfile.tempdir = None  # tempfile reads TMPDIR again


@contextlib.contextmanager
def _thread_limit(threads: int):
    """BLAS, OpenMP and torch threads as the rule's ``threads:`` (Snakemake caps a job's process through
    OMP_NUM_THREADS and the like, which a running process no longer reads)."""
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(max(1, threads))
    with threadpool_limits(limits=max(1, threads)):
        yield


if __name__ == "__main__":
    main()
