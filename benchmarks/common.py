"""What the benchmark scripts share: paths, the workflow's config, the machine a figure was measured on, JSON
output, one record's artifact paths, a scratch copy of the project, the rule logs' start and done lines
(:func:`job_run`), and number formats."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path

from beatflow.classify.fit import DATABASES
from beatflow.io import ARTIFACTS, artifact_paths  # noqa: F401 (the benchmarks take them from here)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MITDB, SVDB = DATABASES  # ../shared's 22 DS1 MIT-BIH records and 39 svdb records, with .atr
PROJECT_FILES = ("Snakefile", "workflow", "scripts", "config", "environment.yml")
GENERATED = "resources"  # the demo's generated input, copied into a scratch project
RECORDS = "data"  # records and sheets (synthetic 20 h records, MIT-BIH), linked from a scratch project


# ------------------------------------------------------------------------------------------------ config


@cache
def config() -> dict:
    """The workflow's config (``config/config.yaml``) with the schema's defaults filled in."""
    import yaml

    from beatflow.config import validated

    return validated(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))


def embed_length_s() -> float:
    return float(config()["embed"]["length_s"])


def band_hz() -> tuple[float, float]:
    """The band-pass before embedding (``embed.band_hz``)."""
    low, high = config()["embed"]["band_hz"]
    return float(low), float(high)


def stage_params(**train) -> tuple:
    """``(SegmentParams, TrainParams, ScoreParams)`` from the config's sections (:func:`config`: the schema's
    defaults where config.yaml does not set a key), ``train`` overriding keys of the train section (``seed``,
    ``epochs``)."""
    from beatflow.detect.params import SegmentParams
    from beatflow.learn.train import TrainParams
    from beatflow.score.scores import ScoreParams

    c = config()
    return (
        SegmentParams.from_config(c["segment"]),
        TrainParams.from_config({**c["train"], **train}),
        ScoreParams.from_config(c["score"]),
    )


# ------------------------------------------------------------------------------------------------ machine


def versions(packages, missing: bool = False) -> dict:
    """Python's and each installed package's version (``missing``: the others as None)."""
    found = {"python": platform.python_version()}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            if missing:
                found[name] = None
    return found


def device_name() -> str:
    """The GPU (nvidia-smi's name, memory, driver), or the CPU where there is none."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out or "no GPU"
    except (OSError, subprocess.CalledProcessError):
        return f"CPU only ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def git_commit() -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine(packages) -> dict:
    """The CPU, the packages' versions and the git commit a CPU measurement comes from."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "platform": platform.platform(),
        "gpu": "none used (CPU backend)",
        "load_average_1min_start": round(os.getloadavg()[0], 2),
        "git_commit": git_commit(),
        "versions": versions(packages, missing=True),
    }


# ------------------------------------------------------------------------------------------------ output


def today() -> str:
    """The UTC date as results files name it (``20261202``)."""
    return datetime.now(UTC).strftime("%Y%m%d")


def _plain(value):
    """numpy scalars and arrays as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def write_json(path: Path, obj, indent: int = 2) -> Path:
    """``obj`` as JSON (numpy values as plain numbers) to ``path``, its folder made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=indent, default=_plain) + "\n")
    return path


def relative(path: Path) -> str:
    """``path`` relative to the repository where it is inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def pct(v, digits: int = 2) -> str:
    return "—" if v is None else f"{100 * v:.{digits}f}"


def auc(v) -> str:
    return "—" if v is None else f"{v:.4f}"


# ------------------------------------------------------------------------------------------------ workflow


def scratch_project(dest: Path) -> Path:
    """A copy of the project in ``dest`` as a user's checkout would be (no results/, no logs/), with the demo's
    input it already has (``resources/``) and a link to its records (``data/``, which may hold gigabytes)."""
    for name in PROJECT_FILES:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / name)
    if (ROOT / GENERATED).exists():
        shutil.copytree(ROOT / GENERATED, dest / GENERATED, symlinks=True)
    if (ROOT / RECORDS).exists():
        (dest / RECORDS).symlink_to(ROOT / RECORDS)
    return dest


def snakemake_args(cores: int, device: str, records: str | None, extra: list[str]) -> list[str]:
    """The arguments after ``snakemake`` of a benchmark's run: ``cores``, one GPU, the backend, the records."""
    records_arg = [f"records={records}"] if records else []
    return ["--cores", str(cores), "--resources", "gpu=1", "--config", f"device={device}", *records_arg, *extra]


def benchmark_seconds(path: Path) -> float:
    """The wall seconds Snakemake's ``benchmark:`` file ``path`` measured (its first row's ``s``)."""
    return float(path.read_text().splitlines()[1].split("\t")[0])


# ------------------------------------------------------------------------------------------------ rule logs

LOG_TIME = "%Y-%m-%d %H:%M:%S,%f"  # logging's asctime, as beatflow.stage writes a rule log's lines
# beatflow.stage's lines "<rule> <record>: start (pid …, X s after the process started…)" and "… done in X s"
JOB_LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ (?P<rule>\S+) (?P<record>\S*): "
    r"(?:start \(pid (?P<pid>\d+), (?P<age>[\d.]+) s after the process started|done in (?P<work>[\d.]+) s)",
    re.MULTILINE,
)


@dataclass(frozen=True)
class JobRun:
    """One run of a job's stage, from its rule log: the start line and the done line after it."""

    rule: str
    record: str  # "" for a rule without one (demo_record)
    pid: int
    process_age_s: float  # the process's age at the start line
    started: datetime  # the start line's time (the local clock, as logged)
    finished: datetime  # the done line's time
    work_s: float  # the stage's seconds, as the done line gives them

    @property
    def start(self) -> float:
        """When the stage started (epoch seconds)."""
        return self.started.timestamp()

    @property
    def done(self) -> float:
        """When the stage was done (epoch seconds)."""
        return self.finished.timestamp()

    @property
    def process_start(self) -> float:
        """When the job's process started (epoch seconds)."""
        return self.start - self.process_age_s


def job_run(text: str) -> JobRun | None:
    """The last finished run in a rule log's ``text`` (a job that a warm worker could not finish is run again
    by its script: the last run counts); None when no start line has its done line."""
    found, start = None, None
    for m in JOB_LINE.finditer(text):
        if m["age"] is not None:
            start = m
        elif start is not None:
            found = JobRun(
                rule=start["rule"],
                record=start["record"],
                pid=int(start["pid"]),
                process_age_s=float(start["age"]),
                started=datetime.strptime(start["time"], LOG_TIME),
                finished=datetime.strptime(m["time"], LOG_TIME),
                work_s=float(m["work"]),
            )
            start = None
    return found
