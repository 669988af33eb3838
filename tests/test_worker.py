"""The warm worker (beatflow.worker): jobs it runs give the same files as jobs run in their own process, a
failing job reports its error and leaves nothing, busy workers are not shared, and workers end with their
Snakemake process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from beatflow.job import Files, Job
from beatflow.stage import execute
from beatflow.worker import client
from beatflow.worker.protocol import address, receive, send

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="warm workers listen on Linux abstract sockets")

INGEST = {"max_gap_s": 1.0, "max_clipped_fraction": 0.05}


def demo_job(out, rule="demo_record", seconds=60):
    return Job(rule=rule, wildcards={}, input=Files(), log=Files([f"{out}.log"]),
               output=Files([f"{out}.csv", f"{out}_truth.csv"], {"csv": f"{out}.csv", "truth": f"{out}_truth.csv"}),
               params={"hours": seconds / 3600, "fs": 250.0, "seed": 4}, config={"device": "cpu"})


def ingest_job(path, out):
    return Job(rule="ingest", wildcards={"record": "r1"}, input=Files([str(path)]), log=Files([f"{out}.log"]),
               output=Files([f"{out}.parquet"]), params={"path": str(path), "fs": None, "leads": None,
                                                        "ingest": INGEST}, config={"device": "cpu"})


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
    monkeypatch.setenv("BEATFLOW_WORKER_OWNER", str(proc.pid))
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
    assert client.submit(demo_job(tmp_path / "warm"), 0.1) is True
    assert execute(demo_job(tmp_path / "cold")) is True
    for suffix in (".csv", "_truth.csv"):
        assert (tmp_path / f"warm{suffix}").read_bytes() == (tmp_path / f"cold{suffix}").read_bytes()
    log = (tmp_path / "warm.log").read_text()
    assert re.search(r"demo_record : start \(pid \d+, [\d.]+ s after the process started; warm worker \d+", log)
    assert "demo_record : done in" in log
    assert "demo_record : done in" in capfd.readouterr().err  # the job's log lines reach the rule's stderr
    assert client.submit(demo_job(tmp_path / "again"), 0.1) is True
    assert len(worker_pids(tmp_path / "warm.log", tmp_path / "again.log")) == 1  # the same warm process


def test_a_failing_job_reports_its_error_and_leaves_no_artifact(owner, tmp_path):
    missing = tmp_path / "absent.csv"
    assert client.submit(ingest_job(missing, tmp_path / "signal"), 0.1) is False
    assert not (tmp_path / "signal.parquet").exists()
    log = (tmp_path / "signal.log").read_text()
    assert "ingest failed: record 'r1'" in log and "absent.csv" in log
    assert client.submit(demo_job(tmp_path / "next"), 0.1) is True  # the worker serves on after a user error


def test_a_busy_worker_is_not_shared_and_workers_end_with_their_snakemake(owner, tmp_path):
    outcomes = {}

    def submit(i):
        outcomes[i] = client.submit(demo_job(tmp_path / f"j{i}", seconds=600), 0.1)

    jobs = [threading.Thread(target=submit, args=(i,)) for i in range(2)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    assert outcomes == {0: True, 1: True}
    pids = worker_pids(tmp_path / "j0.log", tmp_path / "j1.log")
    assert len(pids) == 2  # two jobs at once: two workers of the group
    owner.kill()
    owner.wait()
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids)


def test_a_job_whose_client_is_gone_leaves_no_artifact(owner, tmp_path):
    assert client.submit(demo_job(tmp_path / "warmup"), 0.1) is True  # the ingest group's worker is up
    conn = client._connect(owner.pid, "ingest", 0)
    job = demo_job(tmp_path / "cancelled", seconds=900)
    send(conn, {"job": job.to_dict(), "pid": os.getpid(), "age": 0.0, "env": {}})
    assert "accepted" in receive(conn.makefile("rb"))
    conn.close()  # as when Snakemake kills a cancelled job's script
    worker_log = tmp_path / ".snakemake" / "beatflow" / f"worker-{owner.pid}-ingest-0.log"
    deadline = time.monotonic() + 60
    while "client gone; outputs removed" not in worker_log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (tmp_path / "cancelled.log").exists() and not (tmp_path / "cancelled.csv").exists() and not (tmp_path / "cancelled_truth.csv").exists()


def test_workers_are_private_to_their_run_and_user(tmp_path, monkeypatch):
    here = address(123, "ingest", 0)
    assert here.startswith("\0") and str(os.getuid()) in here
    assert address(124, "ingest", 0) != here and address(123, "learn", 0) != here
    monkeypatch.chdir(tmp_path)
    assert address(123, "ingest", 0) != here  # another working directory


def test_every_rule_with_a_script_has_a_stage_and_a_group():
    from conftest import ROOT

    from beatflow.rules import GROUP_OF, RULES

    scripted = set()
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        rules = re.findall(r"^rule (\w+):(?:(?!^rule ).)*?^\s+script:", smk.read_text(), re.MULTILINE | re.DOTALL)
        scripted |= set(rules)
    assert scripted and scripted <= RULES.keys() and scripted <= GROUP_OF.keys()
    for rule in scripted:
        script = (ROOT / "scripts" / f"{rule}.py").read_text()
        assert "run_rule(snakemake)" in script, rule


def test_the_gpu_warm_up_code_runs_and_leaves_nothing(tmp_path, monkeypatch):
    """warm_up runs on the GPU only; here its code runs on the CPU backend (same functions, same files)."""
    import yaml
    from conftest import ROOT

    from beatflow.backend import select_backend
    from beatflow.rules import warm_up

    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for group in ("detect", "learn", "ingest", "report"):  # the last two have nothing to warm up
        warm_up(group, config, select_backend("cpu"))
    assert list(tmp_path.iterdir()) == []
