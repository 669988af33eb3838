"""The workflow on a real (one-node) SLURM cluster, through workflow/profiles/slurm + tests/slurm/ci.

tests/slurm/cluster.sh starts munged, slurmctld and slurmd on loopback with one fake GPU (no accounting)
and stops them by PID at the end of the module. Where it cannot run (no `sbatch`; not root; an /etc/slurm
slurm.conf that is not its own, as on a real cluster's login node: `cluster.sh check`) the SLURM tests skip
with the reason, unless BEATFLOW_SLURM is set (CI sets BEATFLOW_SLURM=1): then that is a failure.
The check and parse tests at the end need no SLURM.
"""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, copy_project
from contracts import check_record

from beatflow.gpus import GPU_STAGES

CLUSTER = ROOT / "tests" / "slurm" / "cluster.sh"
STATE = Path(os.environ.get("BEATFLOW_SLURM_STATE", "/tmp/beatflow-slurm"))
PROFILES = ("--profile", "workflow/profiles/slurm", "--profile", "tests/slurm/ci")
RECORDS = {"p001": 11, "p002": 12}  # record name -> synthetic seed
LEADS = ["MLII", "V1"]
FS = 250.0
DURATION_S = 180
EPOCHS = 3
GPU_RULES = set(GPU_STAGES)
CPU_RULES = {"plot", "holter", "heart_rate", "holter_report", "evaluate"}
GPU_LIBRARIES = ("cupy", "cudf", "kvikio", "rmm", "torch", "numba.cuda")
# The records' anomaly scores against their truth (contracts.check_evaluation): floors below what the CPU
# workflow reaches on them (docs/experiments/benchmarks.md §10).
MIN_AUROC = 0.97
LABEL_FLOORS = {"V": 0.97, "A": 0.9, "L": 0.9}


def cluster_check(env: dict | None = None, user: str | None = None) -> subprocess.CompletedProcess:
    """`cluster.sh check` (as ``user`` through runuser, when given)."""
    cmd = ["bash", str(CLUSTER), "check"]
    if user:
        cmd = ["runuser", "-u", user, "--", *cmd]
    return subprocess.run(
        cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True, check=False, timeout=60
    )


def cluster_unavailable() -> str | None:
    """Why the one-node test cluster cannot run here (no sbatch; not root; an /etc/slurm that is not ours), or
    None. On a cluster's login node sbatch exists but the test cluster must not be started."""
    if shutil.which("sbatch") is None:
        return "no SLURM: sbatch not found"
    check = cluster_check()
    return None if check.returncode == 0 else (check.stderr.strip() or check.stdout.strip())


@pytest.fixture(scope="module")
def cluster():
    """The one-node cluster, up for this module. Clients find it through SLURM_CONF (set here) and
    /etc/slurm/slurm.conf (a symlink cluster.sh makes, for the srun inside each job)."""
    if not os.environ.get("BEATFLOW_SLURM"):
        reason = cluster_unavailable()
        if reason:
            pytest.skip(f"{reason} (set BEATFLOW_SLURM=1 to make this a failure, as CI does)")
    env = {**os.environ, "BEATFLOW_SLURM_STATE": str(STATE)}
    previous = os.environ.get("SLURM_CONF")
    try:
        start = subprocess.run(
            ["bash", str(CLUSTER), "start"], env=env, capture_output=True, text=True, check=False, timeout=600
        )
        print(start.stdout, start.stderr, sep="\n")
        assert start.returncode == 0, f"cluster.sh start failed:\n{start.stdout}\n{start.stderr}"
        os.environ["SLURM_CONF"] = str(STATE / "etc" / "slurm.conf")
        yield STATE
    finally:
        stop = subprocess.run(
            ["bash", str(CLUSTER), "stop"], env=env, capture_output=True, text=True, check=False, timeout=120
        )
        print(stop.stdout, stop.stderr, sep="\n")
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous


def run_profiles(workdir: Path, name: str) -> tuple[subprocess.CompletedProcess, str]:
    """`snakemake --profile workflow/profiles/slurm --profile tests/slurm/ci --verbose` in ``workdir``."""
    cmd = ["timeout", "-k", "10", "900", sys.executable, "-m", "snakemake", *PROFILES, "--verbose"]
    t0 = time.monotonic()
    result = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, check=False, timeout=960)
    log = result.stdout + result.stderr
    (workdir.parent / f"{name}.log").write_text(log)
    print(f"{name}: rc {result.returncode}, {time.monotonic() - t0:.0f} s, log {workdir.parent / f'{name}.log'}")
    assert result.returncode not in (124, 137), f"snakemake timed out:\n{log[-6000:]}"
    assert result.returncode == 0, f"snakemake failed (rc {result.returncode}):\n{log[-8000:]}"
    return result, log


def submissions(log: str) -> list[dict]:
    """Every sbatch call in a verbose log: rule, record, the call, and the SLURM job id it got.

    Calls and "submitted" lines interleave when jobs are submitted together, so each is keyed by its rule
    and record: the call by its `--comment rule_<rule>_wildcards_<record>`, the job id by its log path
    `.snakemake/slurm_logs/rule_<rule>/<record>/<jobid>.log`."""
    calls: dict[tuple, list[str]] = {}
    for call in re.findall(r"sbatch call: (sbatch .*)", log):
        comment = re.search(r"--comment '?rule_(\w+?)(?:_wildcards_([\w.-]+))?'? ", call)
        assert comment, call
        calls.setdefault(comment.groups(), []).append(call.split(" --wrap=")[0])
    out = []
    submitted = (
        r"has been submitted with SLURM jobid (\d+) "
        r"\(log: \S*/slurm_logs/rule_(\w+)/(?:([\w.-]+)/)?\d+\.log\)"
    )
    for jobid, rule, record in re.findall(submitted, log):
        out.append(
            {"rule": rule, "record": record or None, "call": calls[(rule, record or None)].pop(0), "jobid": jobid}
        )
    assert not any(calls.values()), f"sbatch calls without a job id: {calls}"
    return out


SQUEUE = [
    "squeue",
    "-t",
    "all",
    "-O",
    "JobID:8,Partition:11,State:11,tres-per-job:18,NumCPUs:6,MinMemory:11,Comment:40",
]


def cluster_evidence(path: Path) -> dict[str, dict]:
    """`squeue -t all` (finished jobs stay for MinJobAge) and `sacct` (no accounting here): printed, saved to
    ``path``, and the squeue rows returned by job id."""
    squeue = subprocess.run(SQUEUE, capture_output=True, text=True, check=False)
    sacct = subprocess.run(["sacct", "-X"], capture_output=True, text=True, check=False)
    text = (
        f"$ {' '.join(SQUEUE)}\n{squeue.stdout}{squeue.stderr}"
        f"$ sacct -X   (rc {sacct.returncode})\n{sacct.stdout}{sacct.stderr}"
    )
    path.write_text(text)
    print(text)
    assert squeue.returncode == 0, squeue.stderr
    header, *rows = squeue.stdout.splitlines()
    keys = header.lower().split()
    return {row["jobid"]: row for row in (dict(zip(keys, line.split())) for line in rows)}


def assert_known_to_slurm(jobs: list[dict], squeue: dict[str, dict]) -> None:
    """Every submitted job completed in its partition; GPU jobs held the (fake) GPU."""
    for job in jobs:
        row = squeue.get(job["jobid"])
        assert row is not None and row["state"] == "COMPLETED", (job, row)
        assert row["comment"] == f"rule_{job['rule']}_wildcards_{job['record']}", (job, row)
        gpu = job["rule"] in GPU_RULES
        assert row["partition"] == ("gpu" if gpu else "cpu"), (job, row)
        assert row["tres_per_job"] == ("gres:gpu:fake:1" if gpu else "N/A"), (job, row)


@pytest.fixture(scope="module")
def slurm_run(cluster, tmp_path_factory):
    """Two 3-minute synthetic records run end to end through the SLURM profiles."""
    from beatflow.synth import SynthSpec, write_record

    base = tmp_path_factory.mktemp("slurm")
    run = base / "project"
    run.mkdir()
    copy_project(run)
    shutil.copytree(ROOT / "tests" / "slurm" / "ci", run / "tests" / "slurm" / "ci")
    (run / "data").mkdir()
    rows = ["record\tpath\tfs\tleads\ttruth"]
    for record, seed in RECORDS.items():
        spec = SynthSpec(duration_s=DURATION_S, fs=FS, leads=tuple(LEADS), seed=seed)
        write_record(spec, run / "data" / f"{record}.csv", run / "data" / f"{record}_truth.csv")
        rows.append(f"{record}\tdata/{record}.csv\t{FS:g}\t{','.join(LEADS)}\tdata/{record}_truth.csv")
    (run / "config" / "records.tsv").write_text("\n".join(rows) + "\n")
    config = run / "config" / "config.yaml"
    config.write_text(config.read_text() + f"train:\n  epochs: {EPOCHS}\n")

    t0 = time.monotonic()
    _, log = run_profiles(run, "first_run")
    wall = time.monotonic() - t0
    squeue = cluster_evidence(base / "squeue_first_run.txt")
    return run, log, squeue, wall


@pytest.mark.slurm
def test_workflow_runs_through_slurm(slurm_run):
    run, log, squeue, wall = slurm_run
    print(f"first run: {wall:.0f} s wall")
    jobs = submissions(log)
    assert len(jobs) == len(GPU_RULES | CPU_RULES) * len(RECORDS)  # each job once: no retries
    assert {(j["rule"], j["record"]) for j in jobs} == {
        (rule, record) for rule in GPU_RULES | CPU_RULES for record in RECORDS
    }
    for job in jobs:
        call = job["call"]
        if job["rule"] in GPU_RULES:
            assert " -p gpu" in call and "--gpus=fake:1" in call and "--cpus-per-gpu=1" in call, call
            assert "--cpus-per-task" not in call, call
        else:
            assert " -p cpu" in call and "--cpus-per-task=1" in call and "--gpus" not in call, call
        assert " -t 10" in call and " --mem " in call, call
    print("GPU rule:", next(j["call"] for j in jobs if j["rule"] == "train"))
    print("CPU rule:", next(j["call"] for j in jobs if j["rule"] == "evaluate"))
    # every submitted job is known to SLURM (no accounting: squeue keeps finished jobs for MinJobAge)
    assert_known_to_slurm(jobs, squeue)
    for record in RECORDS:
        check_record(
            run / "results" / record,
            leads=LEADS,
            fs=FS,
            duration_s=DURATION_S,
            epochs=EPOCHS,
            min_auroc=MIN_AUROC,
            labels=LABEL_FLOORS,
        )
        assert re.search(r"backend: (cpu|gpu)", (run / "logs" / record / "train.log").read_text())


@pytest.mark.slurm
def test_segment_edit_resubmits_only_segment_and_downstream(slurm_run):
    run, _, _, _ = slurm_run
    config = run / "config" / "config.yaml"
    config.write_text(config.read_text() + "segment:\n  nms_window_s: 0.25\n")
    _, log = run_profiles(run, "segment_edit")
    squeue = cluster_evidence(run.parent / "squeue_segment_edit.txt")
    jobs = submissions(log)
    assert_known_to_slurm(jobs, squeue)
    submitted = {(j["rule"], j["record"]) for j in jobs}
    assert len(jobs) == len(submitted)  # each once: no retries
    assert submitted == {
        (rule, record)
        for rule in ("segment", "embed", "train", "score", "plot", "holter", "heart_rate", "holter_report", "evaluate")
        for record in RECORDS
    }
    for record in RECORDS:
        check_record(
            run / "results" / record,
            leads=LEADS,
            fs=FS,
            duration_s=DURATION_S,
            epochs=EPOCHS,
            min_auroc=MIN_AUROC,
            labels=LABEL_FLOORS,
        )


def test_parsing_the_workflow_imports_no_gpu_library(tmp_path):
    """What a login node does (parse + plan, through the SLURM profile) must not import a GPU library."""
    run = copy_project(tmp_path)
    cmd = [sys.executable, "-X", "importtime", "-m", "snakemake", "--profile", "workflow/profiles/slurm", "--dry-run"]
    result = subprocess.run(cmd, cwd=run, capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert {"snakemake", "pandas"} <= imported  # the import-time log was captured
    found = sorted(name for name in imported for lib in GPU_LIBRARIES if name == lib or name.startswith(lib + "."))
    assert not found, f"parsing the workflow imported GPU libraries: {found}"


def test_cluster_check_refuses_a_real_etc_slurm(tmp_path):
    """A login node's own /etc/slurm/slurm.conf (here in a stand-in directory) stops the test cluster."""
    etc = tmp_path / "etc-slurm"
    etc.mkdir()
    (etc / "slurm.conf").write_text("ClusterName=site\n")
    check = cluster_check({"BEATFLOW_SLURM_ETC": str(etc), "BEATFLOW_SLURM_STATE": str(tmp_path / "state")})
    if os.geteuid() != 0:
        assert check.returncode == 1 and "needs root" in check.stderr
    else:
        assert check.returncode == 1 and f"{etc}/slurm.conf exists and is not this test cluster's" in check.stderr
        (etc / "slurm.conf").unlink()
        (etc / "slurm.conf").symlink_to(tmp_path / "state" / "etc" / "slurm.conf")  # its own link, left over
        assert (
            cluster_check({"BEATFLOW_SLURM_ETC": str(etc), "BEATFLOW_SLURM_STATE": str(tmp_path / "state")}).returncode
            == 0
        )


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None, reason="needs root and runuser")
def test_cluster_check_refuses_a_user_who_is_not_root(tmp_path):
    check = cluster_check({"BEATFLOW_SLURM_ETC": str(tmp_path)}, user="nobody")
    assert check.returncode == 1 and "needs root" in check.stderr, check.stderr
