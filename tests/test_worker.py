"""The warm worker (beatflow.worker): jobs it runs give the same files as jobs run in their own process, a
failing job reports its error and leaves nothing, busy workers are not shared; and the faults: a cancelled or
orphaned job stops at once and touches no later run's files, a worker's death is in the rule's log, a listener
of another user gets no job, workers stay off where Snakemake deploys the jobs' software, and report workers
stay bounded."""

from __future__ import annotations

import contextlib
import json
import os
import re
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

from beatflow.config import validated
from beatflow.job import Files, Job
from beatflow.stage import execute
from beatflow.worker import client
from beatflow.worker.groups import POOL_ENV
from beatflow.worker.protocol import Channel, Run

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="warm workers run on Linux only (pidfd, SO_PEERCRED)")

INGEST = {"max_gap_s": 1.0, "max_clipped_fraction": 0.05}


def demo_job(out, rule="demo_record", seconds=60):
    return Job(
        rule=rule,
        wildcards={},
        input=Files(),
        log=Files([f"{out}.log"]),
        output=Files([f"{out}.csv", f"{out}_truth.csv"], {"csv": f"{out}.csv", "truth": f"{out}_truth.csv"}),
        params={"hours": seconds / 3600, "fs": 250.0, "seed": 4},
        config={"device": "cpu"},
    )


def ingest_job(path, out):
    return Job(
        rule="ingest",
        wildcards={"record": "r1"},
        input=Files([str(path)]),
        log=Files([f"{out}.log"]),
        output=Files([f"{out}.parquet"]),
        params={"path": str(path), "fs": None, "leads": None, "ingest": INGEST},
        config={"device": "cpu"},
    )


def worker_pids(*logs) -> set[int]:
    return {int(m) for log in logs for m in re.findall(r"warm worker (\d+)", open(log).read())}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:  # a worker that exited is a zombie until this process reaps it
            return stat.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def owner(tmp_path, monkeypatch):
    """A stand-in for the Snakemake process: the workers of the test serve it and end when it ends."""
    proc = subprocess.Popen(["sleep", "600"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BEATFLOW_WORKER_RUN", Run(proc.pid, secrets.token_hex(16)).environment())
    monkeypatch.delenv("BEATFLOW_WORKER", raising=False)
    yield proc
    proc.kill()
    proc.wait()


def test_job_travels_as_json_with_its_named_files():
    from snakemake.iocontainers import InputFiles, Params, Wildcards

    smk = type("Smk", (), {})()
    smk.rule, smk.threads, smk.config = "cohort", 3, {"device": "cpu", "records": "config/records.tsv"}
    smk.wildcards = Wildcards(fromdict={"record": "p01"})
    smk.input = InputFiles(["a.parquet", "b.parquet", "x.json"])
    smk.input._set_name("scores", 0, 2)
    smk.input._set_name("evaluation", 2)
    smk.output, smk.log = InputFiles(["out.parquet"]), InputFiles(["run.log"])
    smk.params = Params([("N", "V"), {"k": [1, 2]}])
    smk.params._set_name("labels", 0)
    smk.params._set_name("settings", 1)
    job = Job.from_snakemake(smk)
    again = Job.from_dict(json.loads(json.dumps(job.to_dict())))
    assert again == job
    assert again.input.scores == ["a.parquet", "b.parquet"] and again.input.evaluation == "x.json"
    assert list(again.input) == ["a.parquet", "b.parquet", "x.json"] and again.output[0] == "out.parquet"
    assert again.par.labels == ["N", "V"] and again.par.settings == {"k": [1, 2]}
    assert (again.record, again.threads, again.device) == ("p01", 3, "cpu")


def test_a_job_in_the_worker_writes_what_it_writes_in_its_own_process(owner, tmp_path, capfd):
    assert client.submit(demo_job(tmp_path / "warm"), 0.1) == (True, None)
    assert execute(demo_job(tmp_path / "cold")) is True
    for suffix in (".csv", "_truth.csv"):
        assert (tmp_path / f"warm{suffix}").read_bytes() == (tmp_path / f"cold{suffix}").read_bytes()
    log = (tmp_path / "warm.log").read_text()
    assert re.search(r"demo_record : start \(pid \d+, [\d.]+ s after the process started; warm worker \d+", log)
    assert "demo_record : done in" in log
    assert "demo_record : done in" in capfd.readouterr().err  # the job's log lines reach the rule's stderr
    assert client.submit(demo_job(tmp_path / "again"), 0.1) == (True, None)
    assert len(worker_pids(tmp_path / "warm.log", tmp_path / "again.log")) == 1  # the same warm process


def test_a_failing_job_reports_its_error_and_leaves_no_artifact(owner, tmp_path):
    missing = tmp_path / "absent.csv"
    assert client.submit(ingest_job(missing, tmp_path / "signal"), 0.1) == (False, None)
    assert not (tmp_path / "signal.parquet").exists()
    log = (tmp_path / "signal.log").read_text()
    assert "ingest failed: record 'r1'" in log and "absent.csv" in log
    assert client.submit(demo_job(tmp_path / "next"), 0.1) == (True, None)  # the worker serves on after a user error


def two_jobs_at_once(tmp_path) -> dict[int, bool]:
    """Two 10-minute demo records submitted at the same time (logs j0.log, j1.log): their outcomes."""
    outcomes = {}

    def submit(i):
        outcomes[i] = client.submit(demo_job(tmp_path / f"j{i}", seconds=600), 0.1)[0]

    jobs = [threading.Thread(target=submit, args=(i,)) for i in range(2)]
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
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids)


def stage_span(log) -> tuple[str, str]:
    """When the stage in a rule log started and was done (the log's timestamps)."""
    text = open(log).read()
    start = re.search(r"^(\S+ \S+) INFO .*: start \(", text, re.MULTILINE).group(1)
    done = re.search(r"^(\S+ \S+) INFO .*: done in", text, re.MULTILINE).group(1)
    return start, done


def test_a_fixed_pool_makes_a_job_wait_for_its_busy_worker(owner, tmp_path, monkeypatch):
    monkeypatch.setenv(POOL_ENV, "1")  # demo_record's group is a GPU group: a pool of one, as on a GPU run
    assert two_jobs_at_once(tmp_path) == {0: True, 1: True}
    assert len(worker_pids(tmp_path / "j0.log", tmp_path / "j1.log")) == 1  # no second worker
    (_, first_done), (second_start, _) = sorted(stage_span(tmp_path / f"j{i}.log") for i in (0, 1))
    assert second_start >= first_done  # one after the other


def loading_worker(run, group, index, asked: list) -> socket.socket:
    """A stand-in for a worker still loading its libraries at ``index``: it says busy to a client that asks for
    a ready worker and notes every request's ``ready_only``; any other request would have waited for it."""
    run.private_directory()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(run.address(group, index))
    listener.listen(4)

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            channel = Channel(conn)
            asked.append(bool(channel.receive(10).get("ready_only")))
            channel.send({"busy": True})
            channel.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener


def test_a_job_goes_to_a_ready_worker_before_one_still_loading(owner, tmp_path):
    run = Run.current()
    client.spawn(run, "ingest", 1, {"device": "cpu"})
    log = run.log_path("ingest", 1)
    deadline = time.monotonic() + 60
    while "ready in" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.05)
    run.log_path("ingest", 0).touch()  # worker 0 was started (it is loading), as by onstart
    asked: list[bool] = []
    listener = loading_worker(run, "ingest", 0, asked)
    try:
        assert client.submit(demo_job(tmp_path / "j"), 0.1) == (True, None)
    finally:
        listener.close()
    assert worker_pids(tmp_path / "j.log") == {int(re.search(r"warm worker pid (\d+)", log.read_text()).group(1))}
    assert asked == [True]  # the loading worker was asked only for a ready worker, then passed over


def hung_job(tmp_path, name="hung"):
    """An ingest job whose record is a FIFO no one writes: its stage blocks in open(), as on a hung mount."""
    fifo = tmp_path / f"{name}.csv"
    os.mkfifo(fifo)
    return ingest_job(fifo, tmp_path / name), fifo


def rule_script(job) -> subprocess.Popen:
    """A rule's script running ``job`` (beatflow.stage.run_job) in its own process, as Snakemake starts it."""
    code = (
        "import json, sys; from beatflow.job import Job; from beatflow.stage import run_job; "
        "sys.exit(0 if run_job(Job.from_dict(json.loads(sys.argv[1]))) else 1)"
    )
    return subprocess.Popen([sys.executable, "-c", code, json.dumps(job.to_dict())], stderr=subprocess.PIPE, text=True)


def worker_of(job, timeout_s=60.0) -> int:
    """The pid of the warm worker that started ``job`` (from the start line in the rule's log)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            if pids := worker_pids(job.log[0]):
                return pids.pop()
        time.sleep(0.05)
    raise AssertionError(f"no warm worker started {job.rule}")


def gone_within(pid, seconds) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_a_cancelled_job_stops_its_worker_at_once(owner, tmp_path):
    """Ctrl-C reaches the rule's script (Snakemake's process group), not the worker: the worker sees its client
    go and ends the job and itself, even with the stage blocked."""
    job, _ = hung_job(tmp_path)
    script = rule_script(job)
    pid = worker_of(job)
    script.send_signal(signal.SIGINT)
    script.wait(timeout=10)
    assert gone_within(pid, 3.0)
    worker_log = next((tmp_path / ".snakemake" / "beatflow").glob("worker-*-ingest-0.log"))
    deadline = time.monotonic() + 5  # the keeping parent writes the end once it has reaped the worker
    while f"worker {pid} ended" not in worker_log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = worker_log.read_text()
    assert "its client is gone" in log and f"worker {pid} ended: exit status 75" in log
    assert sorted(p.name for p in tmp_path.iterdir() if "hung" in p.name) == ["hung.csv", "hung.log"]


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
    from beatflow.synth import SynthSpec, write_record

    job, fifo = hung_job(tmp_path)
    script = rule_script(job)
    pid = worker_of(job)
    write_record(SynthSpec(duration_s=30, seed=1), tmp_path / "real.csv", tmp_path / "real_truth.csv")
    os.replace(tmp_path / "real.csv", fifo)  # the worker stays blocked on the FIFO; the script will read a record
    os.kill(pid, signal.SIGKILL)
    assert script.wait(timeout=60) == 0
    log = (tmp_path / "hung.log").read_text()
    assert f"warm worker {pid}" in log  # the worker's part of the log is kept
    assert f"the warm worker {pid} stopped during the job: killed by signal 9 (SIGKILL)" in log
    assert "running the job here" in log and "ingest r1: done in" in log
    assert (tmp_path / "hung.parquet").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_can_neither_take_nor_reach_a_workers_address(owner, tmp_path):
    run = Run.current()
    assert client.submit(demo_job(tmp_path / "mine"), 0.1) == (True, None)  # a worker listens now
    taken, free = run.address("demo_record", 0), run.address("ingest", 7)
    assert stat.S_IMODE(os.stat(run.directory).st_mode) == 0o700
    result_read, result_write = os.pipe()
    other = os.fork()
    if other == 0:  # the other user: tries to listen at a free name of the run and to connect to a worker
        try:
            os.setuid(65534)
            outcomes = []
            for address, act in ((free, "bind"), (taken, "connect")):
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


def test_a_run_directory_others_can_enter_gets_no_job(owner, tmp_path):
    run = Run.current()
    run.private_directory().chmod(0o755)
    job = demo_job(tmp_path / "mine")
    ok, note = client.submit(job, 0.1)
    assert ok is None and f"{run.directory} is not a directory of this user with mode 0700" in note
    script = rule_script(job)  # the job still runs, in the script's own process, and its log says why
    assert script.wait(timeout=60) == 0
    log = (tmp_path / "mine.log").read_text()
    assert "mode 0700" in log and "; warm worker" not in log and (tmp_path / "mine.csv").exists()


def test_the_config_is_never_on_a_command_line_and_worker_files_are_private(owner, tmp_path):
    run = Run.current()
    secret = secrets.token_hex(8)
    proc = client.spawn(run, "ingest", 0, {"device": "cpu", "storage_password": secret})
    log = run.log_path("ingest", 0)
    deadline = time.monotonic() + 60
    while "ready in" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(re.search(r"warm worker pid (\d+)", log.read_text()).group(1))
    for pid in (proc.pid, worker):
        assert secret not in open(f"/proc/{pid}/cmdline").read()
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(run.directory).st_mode) == 0o700
    address = run.address("ingest", 0)
    assert stat.S_ISSOCK(os.stat(address).st_mode)
    owner.kill()  # the run ends: its workers go, and their socket files and directory with them
    owner.wait()
    deadline = time.monotonic() + 10
    while run.directory.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not run.directory.exists()


def test_report_workers_yield_the_cpu_to_the_gpu_groups(owner, tmp_path):
    from beatflow.worker.protocol import peer

    def niceness_of_worker(group: str, settled: int) -> int:
        channel = client._start(Run.current(), group, 0, {"device": "cpu"})
        keeper = peer(channel.conn)[0]  # the process that bound the address; the worker is its forked child
        channel.close()
        deadline, found = time.monotonic() + 10.0, None
        while time.monotonic() < deadline and found != settled:
            with contextlib.suppress(OSError, IndexError):
                worker = int(open(f"/proc/{keeper}/task/{keeper}/children").read().split()[0])
                found = int(open(f"/proc/{worker}/stat").read().rsplit(")", 1)[1].split()[16])
            time.sleep(0.02)
        return found

    own = os.nice(0)
    assert niceness_of_worker("ingest", own) == own
    assert niceness_of_worker("report", min(19, own + 5)) == min(19, own + 5)


def test_runs_never_share_a_worker(tmp_path, monkeypatch):
    one, other = Run(123, secrets.token_hex(16)), Run(123, secrets.token_hex(16))  # e.g. pid 1 of two containers
    assert one.address("ingest", 0) != other.address("ingest", 0)
    assert os.path.dirname(one.address("ingest", 0)) == str(one.directory)
    assert len(one.address("report@7", 63)) < 108  # a Unix socket's name, relative to the working directory
    assert one.address("ingest", 0) != one.address("learn", 0) != one.address("learn", 1)
    monkeypatch.setenv("BEATFLOW_WORKER_RUN", "123:short")  # a guessable token is no run
    assert Run.current() is None
    monkeypatch.setenv("BEATFLOW_WORKER_RUN", one.environment())
    assert Run.current() == one


def test_workers_stay_off_where_snakemake_deploys_the_jobs_software():
    from types import SimpleNamespace as NS

    from beatflow.worker.session import why_not

    def workflow(methods=(), local=True, touch=False):
        return NS(
            local_exec=local,
            remote_exec=False,
            touch=touch,
            dryrun=False,
            deployment_settings=NS(deployment_method=set(methods)),
        )

    assert why_not(workflow()) is None
    assert "conda" in why_not(workflow(["conda"]))
    assert "apptainer" in why_not(workflow(["apptainer"]))
    assert "executor" in why_not(workflow(local=False))
    assert "--touch" in why_not(workflow(touch=True))


def test_an_abandoned_write_is_removed_and_never_renamed(tmp_path):
    from beatflow.io.atomic import abandon_pending, atomic_path

    code = (
        "import sys, threading; from pathlib import Path; from beatflow.io.atomic import *\n"
        "out = Path(sys.argv[1])\n"
        "with atomic_path(out) as tmp:\n"
        "    tmp.write_text('half')\n"
        "    print(abandon_pending(), flush=True)\n"  # another thread would do this; then the process exits
        "    threading.Timer(1.0, lambda: __import__('os')._exit(0)).start()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "a.json")], capture_output=True, text=True, timeout=30
    )
    assert ".a." in out.stdout and list(tmp_path.iterdir()) == []  # the temporary removed, no rename after
    with atomic_path(tmp_path / "b.json") as tmp:  # in this process, nothing was abandoned
        tmp.write_text("{}")
    assert (tmp_path / "b.json").read_text() == "{}"
    assert abandon_pending  # (imported: the function the worker calls)


def successor_listens(run, group, index, timeout_s) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (channel := client._connect(run, group, index)) is not None:
            channel.close()
            return True
        time.sleep(0.05)
    return False


def test_report_workers_retire_before_they_grow(demo_run, tmp_path, monkeypatch):
    """25 plot jobs: holoviews and bokeh keep state per figure (a worker grew 259 → 521 MB over 25); a report
    worker retires after its group's job or memory limit, so every job's worker stays below the limit, and
    starts its successor, which loads its libraries before the next job comes."""
    from beatflow.worker.groups import GROUPS

    owner = subprocess.Popen(["sleep", "600"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BEATFLOW_WORKER_RUN", Run(owner.pid, secrets.token_hex(16)).environment())
    results = demo_run / "results" / "demo"
    inputs = {name: str(results / f"{name}.parquet") for name in ("signal", "beats", "scores", "latent")}
    inputs["embedding"] = str(results / "embedding.npy")
    config = validated(yaml.safe_load((demo_run / "config" / "config.yaml").read_text()))
    try:
        for i in range(25):
            outputs = {
                f"{fig}_{ext}": str(tmp_path / f"plots{i}" / f"{fig}.{ext}")
                for fig in ("latent", "trace", "lengths", "gallery")
                for ext in ("html", "png")
            }
            job = Job(
                "plot",
                {"record": "demo"},
                Files(list(inputs.values()), inputs),
                Files(list(outputs.values()), outputs),
                Files([str(tmp_path / f"plot{i}.log")]),
                {"segment": config["segment"]},
                config,
            )
            assert client.submit(job, 0.1) == (True, None)
            if i + 1 == GROUPS["report"].max_jobs:  # the first worker retired: its successor listens, unasked
                assert successor_listens(Run.current(), "report", 0, timeout_s=60.0)
    finally:
        owner.kill()
        owner.wait()
    limit = GROUPS["report"]
    jobs_of: dict[int, int] = {}
    for i in range(25):
        log = (tmp_path / f"plot{i}.log").read_text()
        pid = worker_pids(tmp_path / f"plot{i}.log").pop()
        jobs_of[pid] = jobs_of.get(pid, 0) + 1
        assert float(re.search(r"resident memory (\d+) MB", log).group(1)) <= limit.max_rss_mb
    assert len(jobs_of) >= 3 and max(jobs_of.values()) <= limit.max_jobs


@pytest.mark.workflow
def test_ctrl_c_during_train_then_an_immediate_rerun(tmp_path):
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
        for log in (work / ".snakemake" / "beatflow").glob(f"worker-{first.pid}-*.log")
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


def test_every_rule_with_a_script_has_a_stage_and_a_group():
    from conftest import ROOT

    from beatflow.rules import RULES
    from beatflow.worker.groups import GROUP_OF

    scripted = set()
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        rules = re.findall(r"^rule (\w+):(?:(?!^rule ).)*?^\s+script:", smk.read_text(), re.MULTILINE | re.DOTALL)
        scripted |= set(rules)
    assert scripted and scripted <= RULES.keys() and scripted <= GROUP_OF.keys()
    for rule in scripted:
        script = (ROOT / "scripts" / f"{rule}.py").read_text()
        assert "run_rule(snakemake)" in script, rule


def test_the_gpu_warm_up_runs_the_rules_and_leaves_nothing(tmp_path, monkeypatch, caplog):
    """warm_up runs on the GPU only; here the same functions run on the CPU backend (same files). Detect's
    warm-up takes the two-lead path of real records (both leads' envelopes fused), whose kernels a one-lead
    record would leave for the first real job to load."""
    from conftest import ROOT

    from beatflow.worker.groups import GROUPS, warm_up

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    config = validated({**yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), "device": "cpu"})
    for name in GROUPS:  # ingest and report have nothing to warm up
        with caplog.at_level("INFO", logger="beatflow"):
            warm_up(name, config)
    assert list(tmp_path.iterdir()) == []
    assert "2 lead(s) ['MLII', 'V1']" in caplog.text and "detection on both leads" in caplog.text


def test_with_workers_off_nothing_of_them_is_imported(monkeypatch, tmp_path):
    """A rule's script with BEATFLOW_WORKER=off (or no run of workers) runs the job without the worker layer."""
    code = (
        "import json, sys; from beatflow.job import Job; from beatflow.stage import run_job; "
        "ok = run_job(Job.from_dict(json.loads(sys.argv[1]))); "
        "print(ok, sorted(m for m in sys.modules if m.split('.')[:2] == ['beatflow', 'worker']))"
    )
    job = demo_job(tmp_path / "off")
    env = {**os.environ, "BEATFLOW_WORKER": "off", "BEATFLOW_WORKER_RUN": Run(1, secrets.token_hex(16)).environment()}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(job.to_dict())], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out.strip() == "True []" and (tmp_path / "off.csv").exists()


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
