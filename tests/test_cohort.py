"""A cohort of three records: every record is its own chain, and the summary agrees with each record's outputs."""

import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import copy_project, snakemake

from beatflow.io.tables import read_metadata
from beatflow.synth import SynthSpec, write_record

pytestmark = pytest.mark.workflow

RECORDS = {"p01": {"seed": 1, "hr_bpm": 60}, "p02": {"seed": 2, "hr_bpm": 85, "fs": 360}, "p03": {"seed": 3, "hr_bpm": 110}}


@pytest.fixture(scope="module")
def cohort_run(tmp_path_factory):
    run = copy_project(tmp_path_factory.mktemp("cohort"))
    rows = ["record\tpath\tfs\tleads\ttruth"]
    for name, kw in RECORDS.items():
        spec = SynthSpec(duration_s=150, **kw)
        write_record(spec, run / "data" / f"{name}.csv", run / "data" / f"{name}_truth.csv")
        rows.append(f"{name}\tdata/{name}.csv\t{spec.fs:g}\tMLII,V1\tdata/{name}_truth.csv")
    (run / "config" / "records.tsv").write_text("\n".join(rows) + "\n")
    config = run / "config" / "config.yaml"
    config.write_text(config.read_text().replace("epochs: 20", "epochs: 3"))
    snakemake(run, "cohort")
    return run


def test_summary_matches_each_record(cohort_run):
    summary = pd.read_parquet(cohort_run / "results" / "cohort" / "summary.parquet").set_index("record")
    assert list(summary.index) == list(RECORDS)
    for name, kw in RECORDS.items():
        out = cohort_run / "results" / name
        scores = pd.read_parquet(out / "scores.parquet")
        signal = pq.read_table(out / "signal.parquet")
        row = summary.loc[name]
        assert row.duration_s == pytest.approx(150) and signal.num_rows == 150 * kw.get("fs", 250)
        assert row.beats == len(scores) and row.kept == (scores.split != "pruned").sum()
        assert row.anomalies == scores.anomaly.sum()
        assert row.anomalies_morphology == (scores.reason == "morphology").sum()
        assert row.anomalies_rhythm == (scores.reason == "rhythm").sum()
        assert row.mean_hr_bpm == pytest.approx(kw["hr_bpm"], rel=0.1)
        assert row.backend == read_metadata(out / "scores.parquet")["backend"] and row.backend in {"cpu", "gpu"}
        for stage in ("ingest", "segment", "embed", "train", "score", "plot"):
            bench = pd.read_csv(cohort_run / "logs" / name / f"{stage}.benchmark.tsv", sep="\t")
            assert row[f"wall_s_{stage}"] == pytest.approx(bench.s.iloc[0])
    np.testing.assert_allclose(summary.anomalies_per_hour, summary.anomalies / (summary.duration_s / 3600))


def test_cohort_figure_and_report(cohort_run):
    assert (cohort_run / "results" / "cohort" / "cohort.png").read_bytes()[:4] == b"\x89PNG"
    snakemake(cohort_run, "cohort", "--report", "report.html")
    assert "cohort" in (cohort_run / "report.html").read_text()


def test_each_record_is_its_own_chain(cohort_run):
    """A record's new data reruns that record's chain and the cohort table, nothing of the others."""
    (cohort_run / "data" / "p02.csv").touch()
    out = snakemake(cohort_run, "cohort", "--dry-run").stdout
    jobs = set(re.findall(r"wildcards: record=(\w+)", out))
    assert jobs == {"p02"} and "rule cohort" in out
