"""The warm workers (beatflow.worker): jobs they run give the same files as jobs run in their own process, a
failing job reports its error and leaves nothing, busy workers are not shared; and the faults: a cancelled or
orphaned job stops at once and touches no later run's files, a worker's death is in the rule's log, no other
user can reach a worker, workers stay off where Snakemake deploys the jobs' software, and report workers stay
bounded. A stand-in for Snakemake (``owner``) runs the server; rule scripts run as Snakemake runs them."""

from __future__ import annotations

import json
import os
import pickle
import re
import runpy
import secrets
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest
import yaml
from conftest import ROOT

from beatflow.config import validated
from beatflow.stage import LOADED, execute
from beatflow.worker import Run
from beatflow.worker.client import submit

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="warm workers run on Linux only (/proc)")

INGEST = {"max_gap_s": 1.0, "max_clipped_fraction": 0.05}
OWNER = (  # Snakemake's part: the run's server (its first workers only when asked), until it is killed
    "import json, os, sys, time; from beatflow.gpus import run_devices; from beatflow.worker import Run; "
    "from beatflow.worker.server import Server; run = Run(os.getpid(), sys.argv[1]); "
    "Server(run, json.loads(sys.stdin.read()), 2, 1, run_devices(), 1).start(first_workers=sys.argv[2] == 'warm'); "
    "print(run.environment, flush=True); time.sleep(600)"
)


def smk_of(rule, inputs, outputs, log, params, config=None, record=None, threads=1, gpu=0):
    """Snakemake's ``snakemake`` object of a job (``inputs``, ``outputs``: dicts of named files, or lists)."""
    from snakemake.iocontainers import InputFiles, Log, OutputFiles, Params, ResourceList, Snakemake, Wildcards

    def files(kind, given):
        return kind(fromdict=given) if isinstance(given, dict) else kind([str(f) for f in given])

    wildcards = Wildcards(fromdict={"record": record} if record else {})
    return Snakemake(
        *(files(InputFiles, inputs), files(OutputFiles, outputs), Params(fromdict=params), wildcards, threads),
        *(ResourceList(fromdict={"gpu": gpu}), Log([str(log)]), config or {"device": "cpu"}, rule, None),
        str(ROOT / "scripts"),
    )


def main_of(rule):
    """The rule script's ``main``, loaded as a warm worker loads it."""
    return runpy.run_path(str(ROOT / "scripts" / f"{rule}.py"), init_globals={"snakemake": None}, run_name=LOADED)[
        "main"
    ]


def demo_job(out, seconds=60):
    outputs = {"csv": f"{out}.csv", "truth": f"{out}_truth.csv"}
    return smk_of("demo_record", {}, outputs, f"{out}.log", {"hours": seconds / 3600, "fs": 250.0, "seed": 4})


def ingest_job(path, out, **kw):
    params = {"path": str(path), "fs": None, "leads": None, "start": None, "ingest": INGEST}
    return smk_of("ingest", [path], {"signal": f"{out}.parquet"}, f"{out}.log", params, record="r1", **kw)


def run_here(smk, age=0.1):
    """What a rule script does: its log emptied, then the job to the run's warm workers."""
    open(smk.log[0], "w").close()
    return submit(smk, main_of(smk.rule), age)


def worker_pids(*logs) -> set[int]:
    return {int(m) for log in logs for m in re.findall(r"warm worker (\d+)", open(log).read())}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat_file:  # an exited child is a zombie until reaped
            return stat_file.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def start_owner(tmp_path, monkeypatch, config=None, warm=False, env=None) -> subprocess.Popen:
    """A stand-in for Snakemake in ``tmp_path`` (the config on its stdin), this process's jobs in its run."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BEATFLOW_WORKER", raising=False)
    cmd = [sys.executable, "-c", OWNER, secrets.token_hex(16), "warm" if warm else "cold"]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    proc.stdin.write(json.dumps(config or {"device": "cpu"}))
    proc.stdin.close()
    monkeypatch.setenv("BEATFLOW_WORKER_RUN", proc.stdout.readline().strip())
    return proc


@pytest.fixture
def owner(tmp_path, monkeypatch):
    proc = start_owner(tmp_path, monkeypatch)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def ctrl_c_reaches_children():
    """The processes the test starts take SIGINT's default action, as they do started from a terminal. A shell
    that runs the tests in the background (``pytest &``, ``nohup``) ignores SIGINT in them, and an ignored signal
    stays ignored in every process they start: Ctrl-C would reach no one."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_job_in_the_worker_writes_what_it_writes_in_its_own_process(owner, tmp_path, capfd):
    assert run_here(demo_job(tmp_path / "warm")) == (True, None)
    assert execute(demo_job(tmp_path / "cold"), main_of("demo_record")) is True
    for suffix in (".csv", "_truth.csv"):
        assert (tmp_path / f"warm{suffix}").read_bytes() == (tmp_path / f"cold{suffix}").read_bytes()
    log = (tmp_path / "warm.log").read_text()
    assert re.search(r"demo_record : start \(pid \d+, [\d.]+ s after the process started; warm worker \d+", log)
    assert "demo_record : done in" in log
    assert "demo_record : done in" in capfd.readouterr().err  # the job's log lines reach the rule's stderr
    assert run_here(demo_job(tmp_path / "again")) == (True, None)
    assert len(worker_pids(tmp_path / "warm.log", tmp_path / "again.log")) == 1  # the same warm process


def test_a_failing_job_reports_its_error_and_leaves_no_artifact(owner, tmp_path):
    assert run_here(ingest_job(tmp_path / "absent.csv", tmp_path / "signal")) == (False, None)
    assert not (tmp_path / "signal.parquet").exists()
    log = (tmp_path / "signal.log").read_text()
    assert "ingest failed: record 'r1'" in log and "absent.csv" in log
    assert run_here(demo_job(tmp_path / "next")) == (True, None)  # the worker serves on after a user error


def two_jobs_at_once(tmp_path) -> dict[int, bool]:
    """Two 10-minute demo records submitted at the same time (logs j0.log, j1.log): their outcomes."""
    outcomes = {}

    def one(i):
        outcomes[i] = run_here(demo_job(tmp_path / f"j{i}", seconds=600))[0]

    jobs = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    return outcomes


def test_a_busy_worker_is_not_shared_and_workers_end_with_their_snakemake(owner, tmp_path):
    assert two_jobs_at_once(tmp_path) == {0: True, 1: True}
    pids = worker_pids(tmp_path / "j0.log", tmp_path / "j1.log")
    assert len(pids) == 2  # two jobs at once: two workers of the group
    owner.kill()
    owner.wait()
    assert all(gone_within(pid, 10.0) for pid in pids)


def stage_span(log) -> tuple[str, str]:
    """When the stage in a rule log started and was done (the log's timestamps)."""
    text = open(log).read()
    start = re.search(r"^(\S+ \S+) INFO .*: start \(", text, re.MULTILINE).group(1)
    done = re.search(r"^(\S+ \S+) INFO .*: done in", text, re.MULTILINE).group(1)
    return start, done


def test_a_fixed_pool_makes_a_job_wait_for_its_busy_worker(tmp_path, monkeypatch):
    owner = start_owner(tmp_path, monkeypatch, env={"BEATFLOW_GPUS": "0"})  # a GPU run: its GPU groups' pools fixed
    try:
        assert two_jobs_at_once(tmp_path) == {0: True, 1: True}
    finally:
        owner.kill()
        owner.wait()
    assert len(worker_pids(tmp_path / "j0.log", tmp_path / "j1.log")) == 1  # no second worker
    (_, first_done), (second_start, _) = sorted(stage_span(tmp_path / f"j{i}.log") for i in (0, 1))
    assert second_start >= first_done  # one after the other


def test_a_job_goes_to_a_ready_worker_before_one_still_loading():
    from beatflow.worker.server import Server, Worker

    class Quiet:  # a worker's pipe with nothing to read
        def poll(self):
            return False

    server = Server(Run(1, secrets.token_hex(16)), {}, 2, 1, [], 1)
    loading, ready = Worker(None, Quiet(), "ingest"), Worker(None, Quiet(), "ingest", ready=True)
    server.slots["ingest"] = [loading, ready]
    assert server.take("ingest", None) is ready and server.take("ingest", None) is loading
    assert ready.busy and loading.busy


def hung_job(tmp_path, name="hung", **kw):
    """An ingest job whose record is a FIFO no one writes: its stage blocks in open(), as on a hung mount."""
    fifo = tmp_path / f"{name}.csv"
    os.mkfifo(fifo)
    return ingest_job(fifo, tmp_path / name, **kw), fifo


def rule_script(smk) -> subprocess.Popen:
    """The rule's script running ``smk``'s job in its own process, as Snakemake starts it."""
    job = smk.log[0] + ".smk"
    with open(job, "wb") as out:
        pickle.dump(smk, out)
    code = (
        "import pickle, runpy, sys; smk = pickle.load(open(sys.argv[2], 'rb')); "
        "runpy.run_path(sys.argv[1], init_globals={'snakemake': smk}, run_name='__main__')"
    )
    script = str(ROOT / "scripts" / f"{smk.rule}.py")
    return subprocess.Popen([sys.executable, "-c", code, script, job], stderr=subprocess.PIPE, text=True)


def worker_of(smk, timeout_s=60.0) -> int:
    """The pid of the warm worker that started the job (from the start line in the rule's log)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if os.path.exists(smk.log[0]) and (pids := worker_pids(smk.log[0])):
            return pids.pop()
        time.sleep(0.05)
    raise AssertionError(f"no warm worker started {smk.rule}")


def gone_within(pid, seconds) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def workers_log(path=None) -> str:
    return (Run.current().log_path if path is None else path).read_text()


def test_a_cancelled_job_stops_its_worker_at_once(owner, tmp_path, ctrl_c_reaches_children):
    """Ctrl-C reaches the rule's script (Snakemake's process group), not the worker: the server sees the client
    go and the worker ends the job and itself, even with the stage blocked."""
    job, _ = hung_job(tmp_path)
    script = rule_script(job)
    pid = worker_of(job)
    script.send_signal(signal.SIGINT)
    script.wait(timeout=10)
    assert gone_within(pid, 3.0)
    deadline = time.monotonic() + 5  # the server writes the end once it has reaped the worker
    while f"worker {pid} ended" not in workers_log() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = workers_log()
    assert "its client is gone" in log and f"worker {pid} ended: exit status 75" in log
    assert sorted(p.name for p in tmp_path.iterdir() if "hung" in p.name) == ["hung.csv", "hung.log", "hung.log.smk"]


def test_a_hung_job_ends_with_its_snakemake(owner, tmp_path):
    job, _ = hung_job(tmp_path)
    script = rule_script(job)
    pid = worker_of(job)
    owner.kill()  # Snakemake killed: its scripts may live on, its workers must not
    owner.wait()
    assert gone_within(pid, 3.0)
    assert script.wait(timeout=10) == 1  # the script does not run the job of a run that is gone
    assert "its Snakemake process is gone" in script.stderr.read()
    assert not (tmp_path / "hung.parquet").exists()


def test_a_worker_killed_mid_job_is_in_the_rule_log_and_the_script_runs_the_job(owner, tmp_path):
    from beatflow.io.atomic import temporary_path
    from beatflow.synth import SynthSpec, write_record

    job, fifo = hung_job(tmp_path)
    script = rule_script(job)
    pid = worker_of(job)
    write_record(SynthSpec(duration_s=30, seed=1), tmp_path / "real.csv", tmp_path / "real_truth.csv")
    os.replace(tmp_path / "real.csv", fifo)  # the worker stays blocked on the FIFO; the script will read a record
    half = temporary_path(tmp_path / "hung.parquet", pid)  # as if the worker had been writing the signal
    half.write_text("half")
    os.kill(pid, signal.SIGKILL)
    assert script.wait(timeout=60) == 0
    assert not half.exists()  # the server removed what the stopped worker left
    log = (tmp_path / "hung.log").read_text()
    assert f"warm worker {pid}" in log  # the worker's part of the log is kept
    assert f"the warm worker {pid} stopped during the job: killed by signal 9 (SIGKILL)" in log
    assert "running the job here" in log and "ingest r1: done in" in log
    assert (tmp_path / "hung.parquet").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_can_neither_take_nor_reach_a_workers_address(owner, tmp_path):
    run = Run.current()
    assert run_here(demo_job(tmp_path / "mine")) == (True, None)  # the server listens
    assert stat.S_IMODE(os.stat(run.directory).st_mode) == 0o700
    result_read, result_write = os.pipe()
    other = os.fork()
    if other == 0:  # the other user: tries to listen at a free name of the run and to connect to the server
        try:
            os.setuid(65534)
            outcomes = []
            for address, act in ((str(run.directory / "mine"), "bind"), (run.address, "connect")):
                try:
                    getattr(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), act)(address)
                    outcomes.append(f"{act} ok")
                except PermissionError:
                    outcomes.append(f"{act} refused")
            os.write(result_write, ",".join(outcomes).encode())
        finally:
            os._exit(0)
    os.waitpid(other, 0)
    assert os.read(result_read, 100).decode() == "bind refused,connect refused"


def test_a_client_without_the_runs_token_is_not_heard_and_gets_no_job(owner, tmp_path):
    from multiprocessing.connection import AuthenticationError, Client

    run = Run.current()
    with pytest.raises(AuthenticationError):
        Client(run.address, "AF_UNIX", authkey=secrets.token_hex(16).encode())
    assert run_here(demo_job(tmp_path / "mine")) == (True, None)  # the server serves on


def test_a_run_directory_others_can_enter_gets_no_job(owner, tmp_path):
    run = Run.current()
    run.private_directory().chmod(0o755)
    job = demo_job(tmp_path / "mine")
    ok, note = run_here(job)
    assert ok is None and f"{run.directory} is not a directory of this user with mode 0700" in note
    script = rule_script(job)  # the job still runs, in the script's own process, and its log says why
    assert script.wait(timeout=60) == 0
    log = (tmp_path / "mine.log").read_text()
    assert "mode 0700" in log and "; warm worker" not in log and (tmp_path / "mine.csv").exists()


def test_the_config_is_never_on_a_command_line_worker_files_are_private_and_report_workers_yield(tmp_path, monkeypatch):
    secret = secrets.token_hex(8)
    owner = start_owner(tmp_path, monkeypatch, {"device": "cpu", "storage_password": secret}, warm=True)
    run = Run.current()
    try:
        deadline = time.monotonic() + 120
        while workers_log().count("ready in") < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = [int(pid) for pid in re.findall(r"warm worker pid (\d+)", workers_log())]
        assert len(workers) == 5
        for pid in (owner.pid, *workers):
            assert secret not in open(f"/proc/{pid}/cmdline").read()
        assert stat.S_IMODE(os.stat(run.log_path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(run.directory).st_mode) == 0o700
        assert stat.S_ISSOCK(os.stat(run.address).st_mode)
        own, groups = os.nice(0), dict(re.findall(r"warm worker pid (\d+) .*: group (\w+)", workers_log()))
        for pid, group in groups.items():  # the CPU goes first to the groups that hold a GPU
            niceness = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[16])
            assert niceness == (min(19, own + 5) if group == "report" else own), group
    finally:
        owner.kill()  # the run ends: its workers go, and the socket file and directory with them
        owner.wait()
    assert all(gone_within(pid, 10.0) for pid in workers)
    assert not run.directory.exists()


def test_runs_never_share_a_worker(monkeypatch):
    one, other = Run(123, secrets.token_hex(16)), Run(123, secrets.token_hex(16))  # e.g. pid 1 of two containers
    assert one.address != other.address and one.log_path != other.log_path
    assert os.path.dirname(one.address) == str(one.directory)
    assert len(one.address) < 108  # a Unix socket's name, relative to the working directory
    monkeypatch.setenv("BEATFLOW_WORKER_RUN", "123:short")  # a guessable token is no run
    assert Run.current() is None
    monkeypatch.setenv("BEATFLOW_WORKER_RUN", one.environment)
    assert Run.current().address == one.address


def test_workers_stay_off_where_snakemake_deploys_the_jobs_software():
    from types import SimpleNamespace as NS

    from beatflow.worker.server import why_not

    def workflow(methods=(), local=True, touch=False):
        deployment = NS(deployment_method=set(methods))
        return NS(local_exec=local, remote_exec=False, touch=touch, dryrun=False, deployment_settings=deployment)

    assert why_not(workflow()) is None
    assert "conda" in why_not(workflow(["conda"]))
    assert "apptainer" in why_not(workflow(["apptainer"]))
    assert "executor" in why_not(workflow(local=False))
    assert "--touch" in why_not(workflow(touch=True))


def test_report_workers_retire_before_they_grow(demo_run, tmp_path, monkeypatch):
    """25 plot jobs: holoviews and bokeh keep state per figure (a worker grew 259 → 521 MB over 25); a report
    worker retires after its group's job or memory limit, so every job's worker stays below the limit, and
    its successor loads its libraries before the next job comes."""
    from beatflow.worker.groups import GROUPS

    owner = start_owner(tmp_path, monkeypatch)
    results = demo_run / "results" / "demo"
    inputs = {name: str(results / f"{name}.parquet") for name in ("signal", "beats", "scores", "latent")}
    inputs["embedding"] = str(results / "embedding.npy")
    config = validated(yaml.safe_load((demo_run / "config" / "config.yaml").read_text()))
    limit = GROUPS["report"]
    try:
        for i in range(25):
            outputs = {
                f"{fig}_{ext}": str(tmp_path / f"plots{i}" / f"{fig}.{ext}")
                for fig in ("latent", "trace", "lengths", "gallery")
                for ext in ("html", "png")
            }
            job = smk_of("plot", inputs, outputs, tmp_path / f"plot{i}.log", {}, config, record="demo")
            assert run_here(job) == (True, None)
            if i + 1 == limit.max_jobs:  # the first worker retired: its successor gets ready, unasked
                deadline = time.monotonic() + 60
                while workers_log().count("group report") < 2 and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert "retiring after its job 12: 12 jobs" in workers_log()
                assert workers_log().count("group report") == 2
    finally:
        owner.kill()
        owner.wait()
    jobs_of: dict[int, int] = {}
    for i in range(25):
        log = (tmp_path / f"plot{i}.log").read_text()
        pid = worker_pids(tmp_path / f"plot{i}.log").pop()
        jobs_of[pid] = jobs_of.get(pid, 0) + 1
        assert float(re.search(r"resident memory (\d+) MB", log).group(1)) <= limit.max_rss_mb
    assert len(jobs_of) >= 3 and max(jobs_of.values()) <= limit.max_jobs


@pytest.mark.workflow
def test_ctrl_c_during_train_then_an_immediate_rerun(tmp_path, ctrl_c_reaches_children):
    """The run's workers are gone seconds after Ctrl-C, and the rerun's model.pt stays as the rerun wrote it."""
    from conftest import copy_project, snakemake

    work = copy_project(tmp_path)
    config = work / "config" / "config.yaml"
    original = config.read_text()
    config.write_text(original + "train:\n  epochs: 600\n")  # a job that outlives the rerun
    first = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--resources", "gpu=1"],
        cwd=work,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    train_log = work / "logs" / "demo" / "train.log"
    deadline = time.monotonic() + 300
    while not (train_log.exists() and "epoch 1/600" in train_log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "epoch 1/600" in train_log.read_text()
    os.killpg(first.pid, signal.SIGINT)  # Ctrl-C: the terminal signals Snakemake's foreground process group
    cancelled = time.monotonic()
    first.wait(timeout=60)
    workers = {
        int(pid)
        for log in (work / ".snakemake" / "beatflow").glob(f"workers-{first.pid}-*.log")
        for pid in re.findall(r"warm worker pid (\d+)", log.read_text())
    }
    assert workers
    config.write_text(original)
    snakemake(work, "--rerun-incomplete")  # at once, as a user would
    assert all(gone_within(pid, max(0.0, 10 - (time.monotonic() - cancelled))) for pid in workers)
    model = work / "results" / "demo" / "model.pt"
    written = model.read_bytes()
    time.sleep(3)
    assert model.read_bytes() == written and "loss_per_epoch" in str(torch_keys(model))
    assert "Nothing to be done" in snakemake(work, "--dry-run").stdout


def torch_keys(path):
    import torch

    return list(torch.load(path, weights_only=True))


def test_the_gpu_warm_up_runs_the_stages_and_leaves_nothing(tmp_path, monkeypatch, caplog, cpu):
    """The warm-ups run on the GPU only; here the same functions run on the CPU backend (same files). Detect's
    warm-up takes the two-lead path of real records (both leads' envelopes fused), whose kernels a one-lead
    record would leave for the first real job to load."""
    from beatflow.worker.groups import GROUPS, warm_up_detect, warm_up_learn

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    config = validated({**yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), "device": "cpu"})
    assert {group.warm_up for group in GROUPS.values()} == {"", "warm_up_detect", "warm_up_learn"}
    with caplog.at_level("INFO", logger="beatflow"):
        warm_up_detect(config, cpu)
        warm_up_learn(config, cpu)
    assert list(tmp_path.iterdir()) == []
    assert "2 lead(s) ['MLII', 'V1']" in caplog.text and "detection on both leads" in caplog.text


def test_with_workers_off_nothing_of_them_is_imported(tmp_path):
    """A rule's script with BEATFLOW_WORKER=off runs the job without the worker layer."""
    job = demo_job(tmp_path / "off")
    with open(tmp_path / "job.smk", "wb") as out:
        pickle.dump(job, out)
    code = (
        "import pickle, runpy, sys; smk = pickle.load(open(sys.argv[2], 'rb')); "
        "runpy.run_path(sys.argv[1], init_globals={'snakemake': smk}, run_name='__main__'); "
        "print(sorted(m for m in sys.modules if m.split('.')[:2] == ['beatflow', 'worker']))"
    )
    env = {**os.environ, "BEATFLOW_WORKER": "off", "BEATFLOW_WORKER_RUN": Run(1, secrets.token_hex(16)).environment}
    script = str(ROOT / "scripts" / "demo_record.py")
    out = subprocess.run(
        [sys.executable, "-c", code, script, str(tmp_path / "job.smk")], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0 and out.stdout.strip() == "[]" and (tmp_path / "off.csv").exists()


def test_touch_starts_no_worker(demo_run):
    from conftest import snakemake

    before = set((demo_run / ".snakemake" / "beatflow").glob("*.log"))
    (demo_run / "resources" / "demo" / "demo.csv").touch()  # every output is now out of date
    out = snakemake(demo_run, "--touch")
    assert "Job stats:" in out.stdout + out.stderr  # it had jobs to touch
    assert set((demo_run / ".snakemake" / "beatflow").glob("*.log")) == before
    assert "Nothing to be done" in snakemake(demo_run, "--dry-run").stdout


def test_a_workers_jobs_find_their_libraries_loaded(demo_run):
    """Each group's workers import what its stages use before their first job (``Group.modules``): a job
    imports at most a few small modules (Pillow's image plugins on a figure's first save). segment's first call
    on the CPU loads Numba's dispatch machinery (on the GPU, the detect warm-up's job does)."""
    imported = {}
    for log in (demo_run / "logs" / "demo").glob("*.log"):
        for rule, n in re.findall(
            r"(\w+) \S+: the warm worker used [\d.]+ s of CPU and imported (\d+) modules", log.read_text()
        ):
            imported[rule] = int(n)
    assert set(imported) >= {"ingest", "embed", "train", "score", "evaluate", "plot", "holter", "holter_report"}
    assert {rule: n for rule, n in imported.items() if n > 8 and rule != "segment"} == {}


def test_a_worker_counts_what_it_holds_not_what_its_last_job_read():
    """Arrow's memory pool keeps the pages of buffers a job freed (a week's signal read: 1.5 GB), which retired
    every report worker after one job of a long record; free_heaps hands them back before the resident memory is
    read (in a fresh interpreter, so that nothing else of the test process counts; 256 MB of 4 MB buffers)."""
    code = (
        "import numpy as np, pyarrow as pa; from beatflow.worker.process import free_heaps, resident_mb\n"
        "before = resident_mb(); buffers = [pa.allocate_buffer(4 << 20) for _ in range(64)]\n"
        "for b in buffers: np.frombuffer(b, dtype=np.uint8)[:] = 1\n"
        "used = resident_mb(); del buffers, b; kept = resident_mb(); free_heaps()\n"
        "print(used - before, kept - before, resident_mb() - before)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    used, kept, after = map(float, out.stdout.split())
    assert used > 200 and kept > 0.8 * used and after < kept / 3, (used, kept, after)
