"""The warm worker: ``python -m beatflow.worker.server SLOT INDEX warm|cold``, the run's config as JSON on its
stdin, of the run named by ``BEATFLOW_WORKER_RUN``, started by Snakemake's ``onstart`` (each group's first
workers, ``warm``: they warm the group's rules up) or by a rule's script (:mod:`beatflow.worker.client`) that
finds its group's workers busy, or by a worker that retires after its group's ``max_jobs`` or above its
``max_rss_mb`` (its successor). SLOT is a group,
or ``group@device`` for the group's workers on one of several GPUs (started with ``CUDA_VISIBLE_DEVICES`` set
to that device).

The process binds its socket (a file in the run's private directory, :class:`~beatflow.worker.protocol.Run`),
then forks: the child is the worker, the parent only waits for it, writes how it ended (exit status or
signal) into the worker's log, where a client whose job it was reads it, and removes the socket file.

The worker serves one group of rules (:data:`beatflow.worker.groups.GROUPS`), loading the group's libraries
before its first job (:func:`beatflow.worker.groups.preload`). It runs one job at a time (a client that finds
it busy tries the group's next worker) with the code a rule's own process runs
(:func:`beatflow.stage.execute`), in the client's ``BEATFLOW_*`` and temporary-directory environment, with
BLAS, OpenMP and torch threads capped at the rule's ``threads``, streaming the log lines back. While a job
runs, a watch thread sends the client a heartbeat and watches the client's connection and the Snakemake
process: when either goes, the worker removes the job's temporary files and exits at once, so a cancelled or
hung job never renames an artifact into place after its run is gone. It never removes a final output.
It replies with the job's outcome before it tidies up (a full garbage collection, the device memory pools
given back), so that the client's process ends and Snakemake goes on meanwhile. It exits when its Snakemake
process is gone, after ``IDLE_EXIT_S`` without a job, after an unexpected error (a CUDA fault can poison the
process), or after its
group's ``max_jobs`` or above its ``max_rss_mb``."""

from __future__ import annotations

import contextlib
import faulthandler
import json
import logging
import os
import queue
import resource
import select
import signal
import socket
import sys
import threading
import time

from beatflow.job import Job
from beatflow.worker.groups import GROUPS, preload
from beatflow.worker.protocol import (
    EXIT_ABANDONED,
    HEARTBEAT_S,
    PASSED_ENV,
    REQUEST_TIMEOUT_S,
    STALL_S,
    Channel,
    Run,
    group_of,
    peer,
)

IDLE_EXIT_S = 600.0
TIDY_WAIT_S = 0.5  # a client waits this long for a worker that is tidying up after its last reply
POLL_S = 0.5

log = logging.getLogger("beatflow")


class ClientLog(logging.Handler):
    """Sends each log line of the job to its client, which prints it where Snakemake shows the job's stderr."""

    def __init__(self, channel: Channel):
        super().__init__()
        self.channel, self.gone = channel, False
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if not self.gone:
            try:
                self.channel.send({"log": self.format(record)})
            except OSError:
                self.gone = True


class Watch(threading.Thread):
    """During one job: a heartbeat to the client, and the job's end the moment its client or Snakemake goes."""

    def __init__(self, channel: Channel, owner_fd: int, job: Job):
        super().__init__(daemon=True)
        self.channel, self.owner_fd, self.job = channel, owner_fd, job
        self.wake_read, self.wake_write = os.pipe()

    def run(self) -> None:
        poller = select.poll()
        client = self.channel.conn.fileno()
        poller.register(client, select.POLLIN | select.POLLRDHUP)  # the client sends nothing more: EOF, hang-up
        poller.register(self.owner_fd, select.POLLIN)  # a pidfd is readable once its process has exited
        poller.register(self.wake_read, select.POLLIN)
        while True:
            events = dict(poller.poll(HEARTBEAT_S * 1000))
            if self.wake_read in events:
                return
            if self.owner_fd in events:
                abandon(self.job, "its Snakemake process is gone")
            if client in events:
                abandon(self.job, "its client is gone (Snakemake cancelled the job)")
            try:
                self.channel.send({"alive": True})
            except OSError:
                abandon(self.job, "its client is gone (Snakemake cancelled the job)")

    def stop(self) -> None:
        os.write(self.wake_write, b"\0")
        self.join()
        os.close(self.wake_read)
        os.close(self.wake_write)


def abandon(job: Job, reason: str) -> None:
    """Remove the job's temporary files, block any later rename into place, and exit at once."""
    from beatflow.io.atomic import abandon_pending

    removed = abandon_pending()
    os.write(
        2,
        f"{job.rule} {job.record}: {reason}: job stopped, {len(removed)} temporary file(s) removed; "
        f"worker {os.getpid()} exits\n".encode(),
    )
    os._exit(EXIT_ABANDONED)


class Worker:
    """Queues one client's job at a time for the main thread, which runs it."""

    def __init__(self, run: Run, slot: str, index: int, config: str, listener: socket.socket, inode: int):
        self.group, self.listener, self.inode = GROUPS[group_of(slot)[0]], listener, inode
        self.owner_run, self.slot, self.index, self.config = run, slot, index, config
        device = group_of(slot)[1]
        self.where = f"; warm worker {os.getpid()}" + (f" on GPU device {device}" if device else "")
        self.owner_fd = os.pidfd_open(run.owner)  # ProcessLookupError when Snakemake is already gone
        self.requests: queue.Queue = queue.Queue()
        self.busy = threading.Lock()
        self.ready = threading.Event()  # set once the group's libraries are loaded (and warmed up)
        self.retiring = self.tidying = False
        self.jobs_done = 0

    def listen(self) -> None:
        """Accept clients of this user (a thread): queue a request when idle, else answer busy."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # the listener was closed: the worker retires
                return
            if peer(conn)[1] != os.getuid():
                conn.close()
                continue
            channel = Channel(conn)
            try:  # a client that connects and says nothing must not block the rest
                request = channel.receive(REQUEST_TIMEOUT_S)
            except (OSError, ValueError):
                request = None
            if request is None or (request.get("ready_only") and not self.ready.is_set()) or not self.take(channel):
                with contextlib.suppress(OSError):
                    if request is not None:
                        channel.send({"busy": True})
                channel.close()
                continue
            conn.settimeout(STALL_S)  # sends: a client that stops reading is given up
            channel.send({"accepted": os.getpid()})
            self.requests.put((channel, request))

    def owner_gone(self) -> bool:
        return bool(select.select([self.owner_fd], [], [], 0)[0])

    def serve(self) -> None:
        """Run queued jobs in this (the main) thread until the owner is gone, idle too long, retired or a fault."""
        idle_since = time.monotonic()
        while True:
            try:
                channel, request = self.requests.get(timeout=POLL_S)
            except queue.Empty:
                if self.owner_gone():
                    print("its Snakemake process is gone: exiting", file=sys.stderr)
                    return
                if time.monotonic() - idle_since > IDLE_EXIT_S:
                    print(f"no job for {IDLE_EXIT_S:.0f} s: exiting", file=sys.stderr)
                    return
                continue
            if not self.run(channel, request):
                return
            idle_since = time.monotonic()

    def run(self, channel: Channel, request: dict) -> bool:
        """Run one job and reply; False when the worker retires after it."""
        from beatflow.backend import release_memory

        job = Job.from_dict(request["job"])
        watch = Watch(channel, self.owner_fd, job)
        watch.start()
        try:
            ok, healthy = self.execute(channel, request, job)
        finally:
            watch.stop()
        self.tidying = True
        try:  # the outcome first: the client's process ends and Snakemake goes on while this worker tidies up
            channel.send({"ok": ok})
        except OSError:  # its outputs, complete or not, are Snakemake's to judge
            print(f"{job.rule} {job.record}: the client left before the outcome", file=sys.stderr)
        channel.close()
        release_memory()
        retire = self.retirement(healthy)
        if retire:
            print(f"retiring after {job.rule} {job.record}: {retire}", file=sys.stderr, flush=True)
            self.retiring = True
            self.listener.shutdown(socket.SHUT_RDWR)  # new clients go to a fresh worker
            self.listener.close()
            unlink_own(self.owner_run.address(self.slot, self.index), self.inode)  # its successor's name
            if healthy:  # its successor loads the group's libraries now, not when the next job comes
                from beatflow.worker.client import spawn

                spawn(self.owner_run, self.slot, self.index, json.loads(self.config), warm=True)
        self.tidying = False
        self.busy.release()
        return not retire

    def take(self, channel: Channel) -> bool:
        """Whether this worker takes a client's job: it is idle, or tidying up after its last reply and idle
        within :data:`TIDY_WAIT_S`, and not retiring. A worker running a job says busy at once (the client asks
        the group's next worker)."""
        if not self.busy.acquire(blocking=False) and not (self.tidying and self.busy.acquire(timeout=TIDY_WAIT_S)):
            return False
        if self.retiring:
            self.busy.release()
            return False
        return True

    def retirement(self, healthy: bool) -> str:
        """Why the worker retires now, or "" when it serves on."""
        if not healthy:
            return "an unexpected error"
        if self.jobs_done >= self.group.max_jobs:
            return f"{self.jobs_done} jobs"
        if (rss_mb := resident_mb()) > self.group.max_rss_mb:
            return f"resident memory {rss_mb:.0f} MB above {self.group.max_rss_mb} MB"
        return ""

    def execute(self, channel: Channel, request: dict, job: Job) -> tuple[bool, bool]:
        """Whether the job succeeded, and whether the worker is still sound."""
        from beatflow.stage import execute

        _use_environment(request["env"])
        self.jobs_done += 1
        healthy = True
        cpu0, modules0 = _cpu_s(), len(sys.modules)
        try:
            with _thread_limit(job.threads):
                ok = execute(
                    job,
                    ClientLog(channel),
                    client=(request["pid"], request["age"]),
                    where=f"{self.where}, its job {self.jobs_done}",
                )
            log.info(
                "%s %s: the warm worker used %.2f s of CPU and imported %d modules, resident memory %.0f MB "
                "(the rule's benchmark file measures its script, which handed the job over)",
                job.rule,
                job.record,
                _cpu_s() - cpu0,
                len(sys.modules) - modules0,
                resident_mb(),
            )
        except Exception:
            log.exception("%s %s failed in the warm worker", job.rule, job.record)
            ok = healthy = False
        finally:
            logging.basicConfig(handlers=[logging.StreamHandler(sys.stderr)], force=True)
        return ok, healthy


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

    threads = max(1, threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    with threadpool_limits(limits=threads):
        yield


def keep(worker_pid: int, address: str, inode: int) -> None:
    """Wait for the worker, write how it ended into the worker's log and remove its socket file (the parent
    process's only job)."""
    _, status = os.waitpid(worker_pid, 0)
    if os.WIFSIGNALED(status):
        how = f"killed by signal {os.WTERMSIG(status)} ({signal.Signals(os.WTERMSIG(status)).name})"
    else:
        how = f"exit status {os.WEXITSTATUS(status)}"
    unlink_own(address, inode)
    with contextlib.suppress(OSError):  # the run's last worker: its directory goes too
        os.rmdir(os.path.dirname(address))
    print(f"worker {worker_pid} ended: {how}", file=sys.stderr, flush=True)


def unlink_own(address: str, inode: int) -> None:
    """Remove the socket file ``address`` if it is still the one this worker bound (``inode``), not a
    successor's."""
    with contextlib.suppress(OSError):
        if os.lstat(address).st_ino == inode:
            os.unlink(address)


def bind(run: Run, address: str) -> socket.socket | None:
    """A listening socket at ``address`` in the run's private directory; None when it cannot listen there
    (another worker of the run does). A socket file nobody listens on (its keeper was killed) is replaced."""
    run.private_directory()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for attempt in range(2):
        try:
            listener.bind(address)
            listener.listen(16)
            return listener
        except OSError as exc:
            error = exc
        if attempt or not nobody_listens(address):
            break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(address)
    listener.close()
    print(f"{address}: its address is taken ({error}): another worker of the run holds it", file=sys.stderr)
    return None


def nobody_listens(address: str) -> bool:
    """Whether ``address`` is a socket file that no process listens on."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(address)
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    finally:
        probe.close()
    return False


def main(argv: list[str] | None = None) -> None:
    group, index, warm = argv or sys.argv[1:]
    config = sys.stdin.read()
    run = Run.current()
    if run is None:
        sys.exit("beatflow.worker.server: BEATFLOW_WORKER_RUN names no run")
    address = run.address(group, int(index))
    listener = bind(run, address)
    if listener is None:
        return
    inode = os.lstat(address).st_ino
    sys.stderr.flush()
    worker_pid = os.fork()
    if worker_pid:
        listener.close()
        keep(worker_pid, address, inode)
        return
    faulthandler.enable()
    os.nice(GROUPS[group_of(group)[0]].niceness)
    try:
        worker = Worker(run, group, int(index), config, listener, inode)
    except ProcessLookupError:
        print(f"Snakemake process {run.owner} is gone: exiting", file=sys.stderr)
        return
    threading.Thread(target=worker.listen, daemon=True).start()  # jobs queue while it loads
    t0 = time.perf_counter()
    backend, seconds = preload(group_of(group)[0], json.loads(config), warm=warm == "warm")
    worker.ready.set()
    steps = ", ".join(f"{step.replace('_', '-')} {s:.2f} s" for step, s in seconds.items())
    print(
        f"warm worker pid {os.getpid()} for Snakemake {run.owner}: group {group} #{index}, backend {backend}, "
        f"ready in {time.perf_counter() - t0:.2f} s ({steps})",
        file=sys.stderr,
        flush=True,
    )
    worker.serve()


if __name__ == "__main__":
    main()
