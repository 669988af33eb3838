"""Every benchmark script run as its users run it (``python -m benchmarks.<name>``) on tiny inputs: a 3-minute
synthetic record as CSV and as a WFDB record with ``.atr`` annotations, and one workflow run on it. Each test
checks what the script wrote. GPU-only parts run on the CPU backend; the reference detectors that need the
``bench`` extra (sleepecg, NeuroKit2) are left out with ``--detectors``, and run by their own test where
installed."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORD = "syn1"


def bench(name: str, *args, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -m benchmarks.<name> ARGS`` from the repository root; fails the test on a non-zero exit."""
    cmd = [sys.executable, "-m", f"benchmarks.{name}", *map(str, args)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    return out


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    """A 3-minute 2-lead record: ``{"csv", "truth", "sheet", "wfdb"}`` (the WFDB folder holds ``syn1`` and its
    ``.atr``: beats and a normal-rhythm annotation)."""
    import wfdb

    from beatflow.synth import SynthSpec, generate

    d = tmp_path_factory.mktemp("bench-record")
    subprocess.run(
        [sys.executable, "-m", "beatflow.synth", d / "r.csv", d / "r_truth.csv", "--hours", "0.05", "--seed", "5"],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    spec = SynthSpec(duration_s=180, fs=250, seed=5)
    leads, peaks, labels = generate(spec)
    folder = d / "wfdb"
    folder.mkdir()
    signal = np.stack([leads[n] for n in spec.leads], axis=1).astype(np.float64)
    wfdb.wrsamp(
        RECORD,
        fs=spec.fs,
        units=["mV", "mV"],
        sig_name=list(spec.leads),
        p_signal=signal,
        fmt=["16", "16"],
        adc_gain=[1000.0, 1000.0],
        baseline=[0, 0],
        write_dir=str(folder),
    )
    samples = np.concatenate([[max(0, int(peaks[0]) - 10)], peaks]).astype(np.int64)
    wfdb.wrann(
        RECORD,
        "atr",
        samples,
        np.array(["+", *map(str, labels)]),
        aux_note=["(N"] + [""] * len(labels),
        write_dir=str(folder),
        fs=spec.fs,
    )
    sheet = d / "records.tsv"
    sheet.write_text(f"record\tpath\tfs\tleads\ttruth\n{RECORD}\t{folder / RECORD}\t\t\t{folder / RECORD}.atr\n")
    return {"csv": d / "r.csv", "truth": d / "r_truth.csv", "sheet": sheet, "wfdb": folder}


@pytest.fixture(scope="module")
def workflow(record, tmp_path_factory):
    """``benchmarks.run_workflow`` on the WFDB record, CPU backend: ``{"json", "logs", "results"}``."""
    d = tmp_path_factory.mktemp("bench-workflow")
    bench(
        "run_workflow",
        "--devices",
        "cpu",
        "--cores",
        "2",
        "--records",
        record["sheet"],
        "--out",
        d / "run.json",
        "--keep-logs",
        d / "logs",
        "--keep-results",
        d / "results",
    )
    return {"json": d / "run.json", "logs": d / "logs" / "cpu", "results": d / "results" / "cpu"}


def test_run_workflow_times_every_rule_and_keeps_the_evaluation(workflow):
    report = json.loads(workflow["json"].read_text())
    assert {
        "device",
        "versions",
        "cores",
        "record",
        "workflow_wall_s",
        "stages_s",
        "breakdown_s",
        "outside_rules_s",
        "evaluation",
        "load_average",
        "artifacts_unlike_warm",
    } <= report.keys()
    assert report["record"]["name"] == RECORD and report["record"]["hours"] == pytest.approx(0.05, abs=1e-3)
    assert report["workflow_wall_s"]["cpu"] > 0 and report["cores"] == 2
    assert {"ingest", "segment", "embed", "train", "score"} <= report["stages_s"]["cpu"].keys()
    evaluation = report["evaluation"]["cpu"][RECORD]
    assert evaluation["sensitivity"] > 0.99 and evaluation["ppv"] > 0.99 and "holter" in evaluation
    assert (workflow["results"] / RECORD / "evaluation.json").exists()


def test_timeline_reads_the_rule_logs(workflow):
    out = bench("timeline", workflow["logs"]).stdout
    assert " segment " in out and " train " in out
    assert "most GPU jobs at once: 1;" in out


def test_holter_table_from_a_report_and_from_a_results_folder(workflow):
    from_report = bench("holter_table", workflow["json"], "--backend", "cpu").stdout
    from_folder = bench("holter_table", workflow["results"]).stdout
    assert from_report == from_folder
    assert f"| {RECORD} |" in from_report and "Gross (counts summed over records before dividing):" in from_report


def test_real_ecg_on_a_wfdb_folder(record, workflow, tmp_path):
    # the workflow's figures from the run above (run_backend is what test_run_workflow runs); XQRS, from wfdb,
    # is the reference detector every install has
    bench(
        "real_ecg",
        "--data",
        record["wfdb"],
        "--records",
        RECORD,
        "--results",
        workflow["results"],
        "--detectors",
        "xqrs",
        "--json",
        tmp_path / "r.json",
        "--md",
        tmp_path / "r.md",
    )
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["records"] == [RECORD] and set(result["gross"]) == {"beatflow", "xqrs"}
    assert result["gross"]["beatflow"]["f1"] > 0.99 and result["detectors"][RECORD]["xqrs"]["n_true"] > 150
    assert result["workflow"]["cohort"]["detection"]["gross_sensitivity"] > 0.99
    md = (tmp_path / "r.md").read_text()
    assert f"| {RECORD} |" in md and "| XQRS F1 |" in md and "NeuroKit2" not in md
    bench("real_ecg", "--render", tmp_path / "r.json", "--md", tmp_path / "again.md")
    assert (tmp_path / "again.md").read_text() == md


def test_a_record_resampled_keeps_its_beats_and_labels(record):
    """The training rows of a WFDB record resampled to twice its rate: the detector finds the same beats at twice
    the samples (within two), each matched to the same reference beat and label, and the leads read for the
    rhythm checks come at the new rate."""
    from beatflow.classify.dataset import record_leads, record_rows

    path = record["wfdb"] / RECORD
    recorded, doubled = record_rows(path), record_rows(path, 500.0)
    assert recorded.fs == 250.0 and doubled.fs == 500.0
    assert len(doubled.peak) == len(recorded.peak) and np.abs(doubled.peak - 2 * recorded.peak).max() <= 2
    assert (doubled.label == recorded.label).all() and "-" not in recorded.label
    assert len(doubled.matched[0]) == len(recorded.reference) == len(doubled.reference)
    leads, fs = record_leads(doubled)
    assert fs == 500.0 and all(len(x) == 2 * 180 * 250 for x in leads.values())


def test_a_record_read_as_its_first_lead_alone(record):
    """The rows of a WFDB record read as a one-lead recording: the detector on that lead finds the same beats,
    their features are those the two-lead rows keep for the first lead alone, and the rhythm checks read that
    lead only."""
    from beatflow.classify.dataset import record_leads, record_rows

    path = record["wfdb"] / RECORD
    both, one = record_rows(path), record_rows(path, leads=1)
    assert (one.peak == both.peak).all() and (one.label == both.label).all()
    assert one.alone is one.features and np.allclose(one.features, both.alone, equal_nan=True)
    assert not np.allclose(both.features, both.alone, equal_nan=True)
    leads, fs = record_leads(one)
    assert list(leads) == list(record_leads(both)[0])[:1] and fs == 250.0


def test_a_record_read_with_noise_added(record, tmp_path):
    """The rows of a WFDB record with a synthetic noise preset added: the same noise each time the record is read
    (the rhythm checks see what the detector saw), drawn apart for each lead, of the preset's size (its baseline
    wander, 1 and 0.7 mV sines, about 0.9 mV rms; its hum, white and muscle noise about 0.1 mV rms in the QRS
    band), and kept in a cache file of its own; the detector still finds the beats."""
    from beatflow.classify.dataset import cached_rows, record_leads, record_rows
    from beatflow.dsp.filters import butter_band_pass

    path = record["wfdb"] / RECORD
    clean, noisy = record_rows(path), record_rows(path, noise="heavy")
    leads, fs = record_leads(noisy)
    assert fs == 250.0 and all(np.array_equal(x, y) for x, y in zip(leads.values(), record_leads(noisy)[0].values()))
    added = [x - y for x, y in zip(leads.values(), record_leads(clean)[0].values())]
    assert all(0.5 < np.std(a) < 1.3 for a in added) and not np.allclose(added[0], added[1])
    band = [np.std(butter_band_pass(a.astype(np.float64), fs, 5.0, 40.0)) for a in added]
    assert all(0.05 < b < 0.25 for b in band)
    assert len(noisy.matched[0]) >= 0.95 * len(noisy.reference) and noisy.noise == "heavy"
    cached = cached_rows(path, tmp_path, noise="heavy")
    assert [f.name for f in tmp_path.glob("*.npz")] == [f"wfdb_{RECORD}_heavy-noise.npz"]
    assert (cached.peak == noisy.peak).all() and cached.noise == "heavy"
    assert (cached_rows(path, tmp_path, noise="heavy").peak == noisy.peak).all()


def test_cached_rows_come_back_as_made_and_a_file_without_the_first_leads_view_is_made_again(record, tmp_path):
    """The feature cache: a record's rows, as recorded and read as its first lead alone, each in a file of its own,
    come back from it as made; a file of the same code that lacks the first lead's view is made again."""
    from beatflow.classify.dataset import cached_rows

    path = record["wfdb"] / RECORD
    made = {leads: cached_rows(path, tmp_path, leads=leads) for leads in (None, 1)}
    assert sorted(f.name for f in tmp_path.glob("*.npz")) == [f"wfdb_{RECORD}.npz", f"wfdb_{RECORD}_1lead.npz"]
    for leads, rows in made.items():
        again = cached_rows(path, tmp_path, leads=leads)
        assert again.leads == leads and np.array_equal(again.features, rows.features, equal_nan=True)
        assert np.array_equal(again.alone, rows.alone, equal_nan=True) and (again.peak == rows.peak).all()
    file = tmp_path / f"wfdb_{RECORD}.npz"
    with np.load(file) as z:
        older = {k: z[k] for k in z.files if k != "alone"}
    np.savez(file, **older)
    assert np.array_equal(cached_rows(path, tmp_path).alone, made[None].alone, equal_nan=True)
    with np.load(file) as z:
        assert "alone" in z.files


def test_the_classes_benchmark_splits_the_folds_by_database():
    """Each database's share of the 5-fold row: its records' figures and events, its own gross counts."""
    from types import SimpleNamespace

    from beatflow.evaluate import class_figures
    from benchmarks.classes import fold_shares, with_fold_shares

    def figures(reference, classes):
        matched = np.arange(len(reference))
        return class_figures(np.array(list(reference)), np.array(list(classes)), matched, matched)

    records = {"101": figures("NVVN", "NVNN"), "102": figures("NNVV", "NNVV"), "801": figures("VSSN", "VSNN")}
    folds = {"records": records, "events": {name: {"record": name} for name in records}}
    databases = [[SimpleNamespace(record=r, database="mitdb") for r in ("101", "102")]]
    databases.append([SimpleNamespace(record="801", database="svdb")])
    shares = fold_shares(folds, databases)
    assert list(shares) == ["(its mitdb records)", "(its svdb records)"]
    mitdb, svdb = shares["(its mitdb records)"], shares["(its svdb records)"]
    assert list(mitdb["records"]) == ["101", "102"] and list(svdb["events"]) == ["801"]
    assert (mitdb["gross"]["V"]["n"], mitdb["gross"]["V"]["tp"]) == (4, 3)
    assert (svdb["gross"]["S"]["n"], svdb["gross"]["S"]["tp"], svdb["gross"]["V"]["n"]) == (2, 1, 1)
    report = with_fold_shares({"mitdb → svdb": {}, "5-fold by record, both": folds, "svdb → svdb": {}}, databases)
    assert list(report) == [
        "mitdb → svdb",
        "5-fold by record, both",
        "5-fold by record, both (its mitdb records)",
        "5-fold by record, both (its svdb records)",
        "svdb → svdb",
    ]
    assert report["5-fold by record, both (its svdb records)"] == svdb


def test_the_classes_benchmark_gives_each_seeds_figures_their_mean_and_range():
    from benchmarks.classes import spread_table

    spread = {
        "mitdb → svdb": {1: {"V Se": 0.9001, "V runs +P": None}, 2: {"V Se": 0.8989, "V runs +P": 0.5}},
        "5-fold by record, both": {1: {"V Se": 0.92, "V runs +P": None}, 2: {"V Se": 0.94, "V runs +P": None}},
    }
    header, _, *rows = spread_table(spread)
    assert header == "| fitted on → scored on | figure | seed 1 % | seed 2 % | mean % | range % |"
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    assert cells[0] == ["mitdb → svdb", "V Se", "90.01", "89.89", "89.95", "89.89–90.01"]
    assert cells[1][4:] == ["50.00", "50.00–50.00"]  # the undefined seed left out of the mean
    assert cells[2][4] == "93.00" and cells[3][2:] == ["—"] * 4


def test_docs_classes_is_the_classes_benchmarks_result_rendered(tmp_path):
    """``docs/classes.md`` is what ``--render`` writes from the one classes result in ``benchmarks/results/``,
    and its per-record tables give each record's V runs (found of the reference's, true of those given)."""
    from benchmarks.classes import main
    from benchmarks.common import RESULTS, ROOT

    (result,) = sorted(RESULTS.glob("classes-*.json"))
    main(["--render", str(result), "--md", str(tmp_path / "classes.md")])
    text = (tmp_path / "classes.md").read_text()
    assert text == (ROOT / "docs" / "classes.md").read_text()
    events = json.loads(result.read_text())["svdb → mitdb"]["events"]
    runs = {name: e["ventricular"]["runs"] for name, e in events.items()}
    rows = [line for line in text.split("## svdb → mitdb")[1].split("## ")[0].splitlines() if line.startswith("| 2")]
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        r = runs[cells[0]]
        assert cells[-2:] == [f"{r['found']} / {r['reference']}", f"{r['true']} / {r['output']}"]
    assert len(rows) == sum(name.startswith("2") for name in runs) > 5


def test_resampled_detection_on_a_wfdb_folder(record, tmp_path):
    bench("resampled_detection", record["wfdb"], "--fs", 500, 128, "--out", tmp_path / "r.json")
    rates = json.loads((tmp_path / "r.json").read_text())["rates"]
    assert list(rates) == ["as recorded", "500 Hz", "128 Hz"]
    for figures in rates.values():
        assert figures["all"]["reference_beats"] > 150 and figures["all"]["missed"] <= 1
        assert figures["all"]["false_detections"] <= 1 and figures["af"]["reference_beats"] == 0


def test_holter_ds1_from_reference_and_detected_beats(record, workflow, tmp_path):
    out = bench(
        "holter_ds1",
        "--data",
        record["wfdb"],
        "--records",
        RECORD,
        "--results",
        workflow["results"],
        "--json",
        tmp_path / "h.json",
    ).stdout
    result = json.loads((tmp_path / "h.json").read_text())
    assert {"records", "variants", "ablation", "detected", "workflow"} <= result.keys()
    assert {"reference", "prematurity", "no-classes (no P-wave)"} <= result["variants"].keys()
    heart_rate = result["records"][RECORD]["reference"]["agreement"]["heart_rate"]
    assert heart_rate["mean_bpm_error"] == pytest.approx(0, abs=0.5)
    detected = result["detected"]["records"][RECORD]
    assert detected["matched"] >= 0.99 * detected["reference_beats"]
    assert RECORD in result["workflow"]["records"] and "End to end" in out


def test_quality_quick_run_and_its_markdown(tmp_path):
    bench(
        "quality",
        "--quick",
        "--records",
        "nsr70-clean-250,unreadable-white-250",
        "--minutes",
        "2",
        "--detectors",
        "xqrs",
        "--epochs",
        "2",
        "--seeds",
        "0,1",
        "--json",
        tmp_path / "q.json",
        "--md",
        tmp_path / "q.md",
    )
    result = json.loads((tmp_path / "q.json").read_text())
    assert result["detectors"] == ["beatflow", "xqrs"] and result["seeds"] == [0, 1] and result["epochs"] == 2
    clean, unreadable = result["records"]
    assert clean["name"] == "nsr70-clean-250" and clean["spec"]["duration_s"] == 120
    assert clean["detection"]["beatflow"]["sensitivity"] > 0.99 and clean["detection"]["xqrs"]["f1"] > 0.9
    assert set(clean["anomaly"]["seeds"]) == {"0", "1"} and "diagnosis" in clean["anomaly"]
    assert unreadable["unreadable"] and "anomaly" not in unreadable and "missed" in unreadable["beatflow_diagnosis"]
    assert result["embed_length_s"] == 1.0 and result["segment_params"]["nms_window_s"] == 0.3
    md = (tmp_path / "q.md").read_text()
    assert md.startswith("# Detection and anomaly quality") and "| nsr70-clean-250 |" in md
    assert "## Anomaly scoring" in md and "## Speed" in md and "sleepecg" not in md.split("## Targets")[1]
    bench("quality", "--render", tmp_path / "q.json", "--md", tmp_path / "again.md")
    assert (tmp_path / "again.md").read_text() == md


def test_quality_with_every_reference_detector(tmp_path):
    for module in ("sleepecg", "neurokit2"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the bench extra); the other detectors run in the quick test")
    bench(
        "quality",
        "--records",
        "nsr70-clean-250",
        "--minutes",
        "1",
        "--no-chain",
        "--json",
        tmp_path / "q.json",
        "--md",
        tmp_path / "q.md",
    )
    result = json.loads((tmp_path / "q.json").read_text())
    assert set(result["records"][0]["detection"]) == {"beatflow", "sleepecg", "neurokit2", "xqrs"}


def test_stages_on_the_cpu(record, tmp_path):
    bench(
        "stages",
        record["csv"],
        "--device",
        "cpu",
        "--repeat",
        "1",
        "--vae-beats",
        "256",
        "--batch-sizes",
        "128",
        "--out",
        tmp_path / "s.json",
    )
    report = json.loads((tmp_path / "s.json").read_text())
    assert report["csv_parse"]["gb_per_s"] > 0 and "npy_read_2gib" not in report  # a GPU-only part
    se = report["segment_embed"]
    assert se["leads"] == 2 and 150 < se["beats"] < 300 and se["segment_plus_embed_s"] > 0
    assert {"band_pass_all_leads", "embed_kernel", "second_lead_envelope"} <= se["parts_s"].keys()
    assert report["vae"][0]["beats"] == 256 and report["vae"][0]["s_per_epoch"] > 0
    classes = report["classes"]
    assert classes["beats"] == se["beats"] and classes["classes_s"] > 0
    assert classes["parts_s"].keys() == {"features", "trees", "rules"} and min(classes["parts_s"].values()) > 0


def test_seed_spread_on_the_cpu(record, tmp_path):
    bench(
        "seed_spread",
        record["csv"],
        record["truth"],
        "--device",
        "cpu",
        "--seeds",
        "0",
        "1",
        "--epochs",
        "2",
        "--out",
        tmp_path / "s.json",
    )
    report = json.loads((tmp_path / "s.json").read_text())
    assert set(report["seeds"]) == {"0", "1"}
    run = report["seeds"]["0"]
    assert "V" in run["auroc"] and all(v is None or 0 <= v <= 1 for v in run["auroc"].values())
    assert 0 <= run["normal_flagged"] <= 1 and set(run["after_a_beat_labelled"]) == {"N", "A", "V", "L"}


def test_bigeminy_scale_times_rule_1_over_each_length(tmp_path):
    """Each length's record holds its cycles, and rule 1 makes every conducted beat classed V in it N."""
    bench("bigeminy_scale", "--cycles", 30, 300, "--repeat", 1, "--out", tmp_path / "b.json")
    rows = json.loads((tmp_path / "b.json").read_text())["lengths"]
    assert [(r["cycles"], r["beats"]) for r in rows] == [(30, 180), (300, 720)]
    assert all(r["made_n"] == r["conducted_classed_v"] == r["cycles"] // 2 for r in rows)
    assert all(r["seconds"] > 0 and r["peak_traced_mib"] >= 0 for r in rows)


def test_imports_times_steps_in_fresh_interpreters(tmp_path):
    bench("imports", "--repeat", "1", "--steps", "numpy,cupy", "--rules", "segment", "--out", tmp_path / "i.json")
    result = json.loads((tmp_path / "i.json").read_text())
    assert set(result["seconds"]) == {"numpy", "cupy"} and result["seconds"]["numpy"] > 0
    if importlib.util.find_spec("cupy") is None:
        assert result["seconds"]["cupy"] is None and result["select_backend_s_per_rule"]["segment"] is None


def test_probe_worker_on_the_cpu(record, tmp_path):
    out = bench("probe_worker", record["csv"], "warm", "--device", "cpu", "--out", tmp_path / "p.json").stdout
    times = json.loads((tmp_path / "p.json").read_text())
    assert json.loads(out.strip().splitlines()[-1]) == times
    assert times["mode"] == "warm" and len(times["segment_s"]) == 2 and len(times["embed_s"]) == 2


def test_no_benchmark_edits_the_import_path():
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        assert "sys.path" not in path.read_text(), path.name


def test_job_profile_splits_every_job_into_its_phases(record, tmp_path):
    out = tmp_path / "profile.json"
    bench("job_profile", "--device", "cpu", "--cores", "2", "--records", record["sheet"], "--out", out)
    report = json.loads(out.read_text())
    rules = {"ingest", "segment", "embed", "train", "score", "plot", "holter", "holter_report"}
    assert rules <= report["per_rule"].keys()
    for rule in rules:
        phases = report["per_rule"][rule]
        assert phases["jobs"] == 1 and phases["work_s"]["total"] > 0
        assert all(phases[f"{p}_s"]["total"] >= -0.05 for p in ("launch", "startup", "exit", "bookkeeping"))
    slot = report["gpu_slot"]  # the GPU stages, on the CPU here
    assert slot["jobs"] == 5 and 0 < slot["worked_s"] <= slot["held_s"] <= report["wall_s"]
    row = next(r for r in report["job_rows"] if r["rule"] == "segment")
    spans = [row[p] for p in ("launch", "startup", "work", "exit", "bookkeeping")]
    assert sum(spans) == pytest.approx(row["finished"] - row["decided"], abs=0.02)


def test_job_run_reads_the_stage_log_lines():
    """benchmarks.common.job_run, the one parser of beatflow.stage's start and done lines: the last finished run
    counts (a job a warm worker did not finish is run again by its script), a rule without a record reads."""
    code = """
from benchmarks.common import job_run
text = '''2026-12-02 17:16:32,959 INFO segment r1: start (pid 7776, 0.46 s after the process started; warm worker 7740)
2026-12-02 17:16:33,000 WARNING the warm worker did not answer
2026-12-02 17:16:34,000 INFO segment r1: start (pid 7790, 1.50 s after the process started)
2026-12-02 17:16:36,500 INFO segment r1: done in 2.49 s
'''
run = job_run(text)
print(run.rule, run.record, run.pid, run.process_age_s, run.work_s, (run.finished - run.started).total_seconds(),
      round(run.start - run.process_start, 3))
print(job_run(text.splitlines()[0]))
print(job_run('2026-12-02 17:16:29,466 INFO demo_record : start (pid 7, 0.53 s after the process started)\\n'
              '2026-12-02 17:16:30,438 INFO demo_record : done in 0.97 s\\n').rule)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["segment r1 7790 1.5 2.49 2.5 1.5", "None", "demo_record"]


def test_gpu_memory_is_read_per_process_and_named_by_worker_group(tmp_path):
    """run_workflow's per-process device memory: each pid's most over nvidia-smi's samples, named by the warm
    worker whose log gives its pid; other processes by pid; lines nvidia-smi could not fill are skipped."""
    (tmp_path / "gpu-apps.csv").write_text(
        "3379, 1200\n3377, 800\n3379, 20500\n4100, 300\n3377, [N/A]\nNo running processes found\n"
    )
    (tmp_path / "workers" / "run").mkdir(parents=True)
    (tmp_path / "workers" / "run" / "workers-1.log").write_text(
        "warm worker pid 3377 for Snakemake 3354: group ingest #0, backend gpu, ready in 2.40 s\n"
        "warm worker pid 3379 for Snakemake 3354: group learn #0, backend gpu, ready in 8.25 s\n"
    )
    code = (
        "import json, sys; from pathlib import Path; from benchmarks.run_workflow import memory_by_process\n"
        "d = Path(sys.argv[1]); print(json.dumps(memory_by_process(d / 'gpu-apps.csv', d / 'workers')))"
    )
    out = subprocess.run([sys.executable, "-c", code, tmp_path], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {"learn #0 (pid 3379)": 20500.0, "ingest #0 (pid 3377)": 800.0, "pid 4100": 300.0}
    assert list(json.loads(out.stdout)) == ["learn #0 (pid 3379)", "ingest #0 (pid 3377)", "pid 4100"]
