"""A warm worker, ``python -m beatflow.worker.process FD`` (its pipe to the server, which sends its group and the
run's config, never on a command line that every user can read): one job at a time, the rule's own script; a
``cancel`` (its client is gone) or the pipe's end (Snakemake is gone) during a job ends the process at once."""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import logging
import os
import queue
import resource
import runpy
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection

from threadpoolctl import threadpool_limits

from beatflow.backend import release_device_memory
from beatflow.stage import LOADED, execute
from beatflow.worker.groups import GROUPS, preload

log = logging.getLogger("beatflow")


def listen(conn: Connection, jobs: queue.Queue, current: list, run) -> None:
    """The reader thread: queue each job, or end it and the process (status 75)."""
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            message = None
        if message not in (None, "cancel"):
            current[:] = [message["smk"]]
            jobs.put(message)
        elif current:
            why = "its client is gone (Snakemake cancelled the job)" if message else "its Snakemake process is gone"
            job = f"{current[0].rule} {current[0].wildcards.get('record', '')}"
            os.write(2, f"{job}: {why}: job stopped; worker exits\n".encode())
            os._exit(75)
        elif message is None:
            run.remove()  # where Snakemake was killed, nobody else does
            return jobs.put(None)


def main() -> None:
    conn = Connection(int(sys.argv[1]))
    setup, jobs, current, t0 = conn.recv(), queue.Queue(), [], time.perf_counter()
    faulthandler.enable()
    os.nice(GROUPS[setup["group"]].niceness)
    threading.Thread(target=listen, args=(conn, jobs, current, setup["run"]), daemon=True).start()
    backend, seconds = preload(setup["group"], setup["config"], setup["warm"])
    steps = ", ".join(f"{step.replace('_', '-')} {s:.2f} s" for step, s in seconds.items())
    who = f"warm worker pid {os.getpid()} for Snakemake {setup['run'].owner}: group {setup['slot']} #{setup['index']}"
    print(f"{who}, backend {backend}, ready in {time.perf_counter() - t0:.2f} s ({steps})", file=sys.stderr, flush=True)
    conn.send("ready")
    where, done = f"; warm worker {os.getpid()}" + (f" on GPU device {d}" if (d := setup["device"]) else ""), 0
    while (request := jobs.get()) is not None:
        done += 1
        ok, retire = run_job(request, f"{where}, its job {done}", GROUPS[setup["group"]], done)
        current.clear()
        conn.send({"ok": ok, "retire": retire})  # the outcome first: Snakemake goes on while this worker tidies up
        if retire:
            return print(f"retiring after its job {done}: {retire}", file=sys.stderr)
        release_memory()
    print("its Snakemake process ended: exiting", file=sys.stderr)


def run_job(request: dict, where: str, group, done: int) -> tuple[bool, str]:
    """Run one job's script; whether it succeeded, and why the worker retires after it ("" when it serves on)."""
    smk, cpu0, modules0 = request["smk"], _cpu_s(), len(sys.modules)
    os.environ.update(request["env"])  # the client's BEATFLOW_* and temporary directory
    tempfile.tempdir = None  # tempfile reads TMPDIR again
    threadpool_limits(max(1, smk.threads))  # the rule's threads: a running process no longer reads OMP_NUM_THREADS
    if (torch := sys.modules.get("torch")) is not None:
        torch.set_num_threads(max(1, smk.threads))
    try:
        main = runpy.run_path(request["script"], init_globals={"snakemake": smk}, run_name=LOADED)["main"]
        ok = execute(smk, main, client=(request["pid"], request["age"]), where=where)
        log.info(
            "%s %s: the warm worker used %.2f s of CPU and imported %d modules, resident memory %.0f MB "
            "(the rule's benchmark file measures its script, which handed the job over)",
            *(smk.rule, smk.wildcards.get("record", ""), _cpu_s() - cpu0, len(sys.modules) - modules0, resident_mb()),
        )
    except Exception:
        log.exception("%s failed in the warm worker", smk.rule)
        return False, "an unexpected error"  # a CUDA fault can poison the process
    finally:
        logging.basicConfig(handlers=[logging.StreamHandler(sys.stderr)], force=True)
    rss = resident_mb()
    if rss > group.max_rss_mb:  # what the job freed but the allocators kept does not count
        free_heaps()
        rss = resident_mb()
    if done >= group.max_jobs or rss > group.max_rss_mb:
        return (
            ok,
            f"{done} jobs" if done >= group.max_jobs else f"resident memory {rss:.0f} MB above {group.max_rss_mb} MB",
        )
    return ok, ""


def release_memory() -> None:
    """A full garbage collection, then the device memory no array holds given back to the driver."""
    import gc

    gc.collect()
    release_device_memory()


def free_heaps() -> None:
    """Hand the memory a finished job freed back to the system: Arrow's pool (mimalloc keeps a read table's
    pages: a week's signal, 1.5 GB) and glibc's heap (``malloc_trim``), so that the resident memory that
    retires a worker is what it holds, not what its last job read. Pages that Arrow's reader threads allocated
    can stay until those threads run again (mimalloc frees them there): then the worker may still retire."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL(None).malloc_trim(0)


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cpu_s() -> float:
    return sum(resource.getrusage(resource.RUSAGE_SELF)[:2])


if __name__ == "__main__":
    main()
